// Constrained decoding (NOTE [Grammars] in docs/design.md): GBNF grammars as llama.cpp defines
// them, and JSON Schema translated to GBNF. A compiled Grammar is immutable and shared by every
// sequence that generates under it (GenerateOptions::grammar); the engine walks its token trie
// against the grammar's state to mask the logits at each step.
//
//   auto g = spore::nlp::Grammar::from_gbnf("root ::= \"yes\" | \"no\"");
//   spore::nlp::GenerateOptions o;
//   o.grammar = g;
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace spore::nlp {

// Bounds for untrusted grammars: exceeding one is kValue naming the limit, never a crash.
struct GrammarLimits {
  size_t max_text_bytes = 1 << 20;   // the GBNF text
  size_t max_rules = 20000;          // rules, generated ones (groups, repetitions) included
  size_t max_elements = 1 << 20;     // symbols after repetitions are expanded
  int max_nesting = 100;             // nested parentheses
  int max_repetition = 2000;         // the m and n of x{m,n}
  size_t max_stacks = 4096;          // parse stacks alive at once while matching (an ambiguous
                                     // grammar's state set): more ends the sequence with an error
  size_t max_walk_states = 1 << 16;  // states one mask computation interns (memory); past it the
                                     // trie walk goes on without its transition tables
};

class Grammar {
 public:
  // Parses GBNF text whose start rule is `root`. kValue naming the line and the fix for syntax
  // errors, undefined rules, left recursion, a root that derives no finite string, and limits.
  static std::shared_ptr<const Grammar> from_gbnf(std::string_view text, const GrammarLimits& limits = {},
                                                  std::string_view root = "root");

  struct Impl;
  explicit Grammar(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  const Impl& impl() const { return *impl_; }
  size_t rule_count() const;

 private:
  std::shared_ptr<const Impl> impl_;
};

struct JsonSchemaOptions {
  size_t max_schema_bytes = 1 << 20;  // the schema's JSON text
  int max_depth = 64;                 // nested schemas (properties, items, anyOf, ...)
  size_t max_grammar_bytes = 1 << 20; // the GBNF it translates to
  // Strings the schema leaves unbounded get at most this many characters (0: unbounded). A
  // server keeps 0; a test with random weights bounds them so that every output finishes.
  int64_t default_max_string_chars = 0;
};

// Translates a JSON Schema (the draft 2020-12 subset OpenAI's structured outputs accept) to
// GBNF: kValue naming the keyword's JSON pointer for what it does not take (a keyword outside
// the subset, an unknown $ref, a `pattern` it refuses, limits).
// `root`: the start rule's name; other rules are prefixed with it ("<root>-...") so that several
// translations can share one grammar (a tool call's arguments per tool).
std::string json_schema_to_gbnf(std::string_view schema_json, const JsonSchemaOptions& options = {},
                                std::string_view root = "root");

// GBNF for any JSON object (OpenAI's response_format {"type": "json_object"}).
std::string json_object_gbnf();

}  // namespace spore::nlp
