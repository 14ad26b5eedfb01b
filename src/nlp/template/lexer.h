// Splits template text into data and tag tokens the way jinja2's lexer does with transformers'
// settings (trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False): newlines
// normalised to \n, one trailing newline dropped, {%- -%} {{- -}} {#- -#} and {%+ +%} applied,
// a block tag alone on its line takes its indentation and its newline with it.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace spore::nlp::tmpl {

enum class Tok { kData, kVarBegin, kVarEnd, kBlockBegin, kBlockEnd, kName, kString, kInt, kFloat, kOp, kEof };

struct Token {
  Tok kind;
  std::string text;  // data, name, operator, or a string literal's decoded value
  int line = 1;
  int col = 1;
  std::int64_t int_value = 0;
  double float_value = 0;
};

std::vector<Token> lex(std::string_view source);

}  // namespace spore::nlp::tmpl
