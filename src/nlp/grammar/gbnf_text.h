// Small helpers for writing GBNF text (the JSON Schema and regex translators, NOTE [Grammars]).
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace spore::nlp::detail {

// A code point as a GBNF escape usable in a literal or a class (\uHHHH or \UHHHHHHHH).
inline std::string gbnf_escape(uint32_t cp) {
  char buf[16];
  if (cp <= 0xFFFF) std::snprintf(buf, sizeof buf, "\\u%04X", (unsigned)cp);
  else std::snprintf(buf, sizeof buf, "\\U%08X", (unsigned)cp);
  return buf;
}

// A GBNF string literal matching the UTF-8 text exactly.
inline std::string gbnf_literal(std::string_view text) {
  std::string out = "\"";
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = (unsigned char)text[i];
    const int n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4;
    uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k < n && i + (size_t)k < text.size(); ++k) cp = (cp << 6) | ((unsigned char)text[i + (size_t)k] & 0x3F);
    i += (size_t)n;
    if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9') || cp == ' ' || cp == ':' ||
        cp == ',' || cp == '{' || cp == '}' || cp == '<' || cp == '>' || cp == '_' || cp == '.')
      out.push_back((char)cp);
    else
      out += gbnf_escape(cp);
  }
  return out + "\"";
}

// Translates a JSON Schema `pattern` (an ECMA-262 regex subset) into a GBNF expression for the
// JSON-encoded characters of a string that matches it entirely (a match is also a search hit).
// kValue naming what it refuses: lookaround, backreferences, nested unbounded repetition (the
// patterns that backtrack catastrophically), counts over `max_count`.
std::string regex_to_gbnf(std::string_view pattern, int max_count = 1000);

}  // namespace spore::nlp::detail
