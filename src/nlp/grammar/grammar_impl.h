// The compiled form of a GBNF grammar (NOTE [Grammars]): every rule's alternatives as runs of
// symbols in one flat array, each run closed by an kEnd symbol. Groups and repetitions were
// rewritten into generated rules by the parser, so matching needs only characters and rule
// references.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "spore/nlp/grammar.h"

namespace spore::nlp {

struct Symbol {
  enum Kind : uint8_t { kEnd, kRef, kChar, kCharNot };
  Kind kind = kEnd;
  int32_t a = 0, b = 0;  // kRef: a = rule; kChar/kCharNot: ranges [a, b) of Grammar::Impl::ranges
};

struct Grammar::Impl {
  std::vector<Symbol> symbols;
  std::vector<std::pair<uint32_t, uint32_t>> ranges;  // inclusive code point ranges
  std::vector<std::vector<int32_t>> alternatives;     // by rule: the index of each alternative's first symbol
  std::vector<std::string> names;                     // by rule
  int32_t root = 0;
  GrammarLimits limits;

  // Whether a character symbol accepts `cp`.
  bool accepts(const Symbol& s, uint32_t cp) const {
    bool in = false;
    for (int32_t i = s.a; i < s.b && !in; ++i) in = cp >= ranges[(size_t)i].first && cp <= ranges[(size_t)i].second;
    return s.kind == Symbol::kChar ? in : !in;
  }
  // Whether a character symbol accepts some code point in [lo, hi] (a partial UTF-8 sequence).
  bool accepts_some(const Symbol& s, uint32_t lo, uint32_t hi) const {
    if (s.kind == Symbol::kChar) {
      for (int32_t i = s.a; i < s.b; ++i)
        if (ranges[(size_t)i].first <= hi && ranges[(size_t)i].second >= lo) return true;
      return false;
    }
    // Negated: some code point of [lo, hi] lies outside every range (ranges may overlap).
    for (uint32_t cp = lo;;) {
      bool moved = false;
      for (int32_t i = s.a; i < s.b; ++i)
        if (cp >= ranges[(size_t)i].first && cp <= ranges[(size_t)i].second) {
          if (ranges[(size_t)i].second >= hi) return false;
          cp = ranges[(size_t)i].second + 1;
          moved = true;
        }
      if (!moved) return true;
    }
  }
};

namespace detail {
// The checks after parsing: kValue for left recursion and for a root that derives no finite
// string. In grammar_checks.cc.
void check_grammar(const Grammar::Impl& g);
}  // namespace detail

}  // namespace spore::nlp
