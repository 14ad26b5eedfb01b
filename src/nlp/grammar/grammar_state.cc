// Parse stacks over the grammar's symbols (NOTE [Grammars]). Expansion replaces a stack whose top
// is a rule reference by one stack per alternative until every top is a character symbol (or the
// stack is empty); the checks at compile time rule out left recursion, so expansion ends, and
// max_stacks bounds an ambiguous grammar's state set.
#include <algorithm>

#include "nlp/grammar/matcher.h"
#include "spore/error.h"

namespace spore::nlp::detail {

namespace {

void expand(const Grammar::Impl& g, ParseStack stack, std::vector<ParseStack>& out) {
  std::vector<ParseStack> work;
  work.push_back(std::move(stack));
  size_t steps = 0;
  while (!work.empty()) {
    ParseStack st = std::move(work.back());
    work.pop_back();
    if (++steps > 64 * g.limits.max_stacks || out.size() + work.size() > g.limits.max_stacks)
      throw Error(ErrorCode::kValue, "grammar: more than " + std::to_string(g.limits.max_stacks) +
                                         " parses are alive at once (the grammar is too ambiguous here); make its "
                                         "alternatives start differently");
    if (st.empty()) {
      out.push_back(std::move(st));
      continue;
    }
    const int32_t pos = st.back();
    const Symbol& s = g.symbols[(size_t)pos];
    if (s.kind == Symbol::kEnd) {
      st.pop_back();
      work.push_back(std::move(st));
    } else if (s.kind == Symbol::kRef) {
      st.pop_back();
      // The continuation after the reference, unless it is the end of its alternative (a tail
      // call: right recursion does not grow the stack).
      if (g.symbols[(size_t)pos + 1].kind != Symbol::kEnd) st.push_back(pos + 1);
      for (int32_t alt : g.alternatives[(size_t)s.a]) {
        ParseStack next = st;
        next.push_back(alt);
        work.push_back(std::move(next));
      }
    } else {
      out.push_back(std::move(st));
    }
  }
}

void normalise(std::vector<ParseStack>& stacks) {
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
}

}  // namespace

GrammarState GrammarState::start(const Grammar::Impl& g) {
  GrammarState s;
  ParseStack root;
  // A root reference position is not a symbol, so start from each root alternative.
  for (int32_t alt : g.alternatives[(size_t)g.root]) expand(g, ParseStack{alt}, s.stacks);
  normalise(s.stacks);
  return s;
}

Utf8Step utf8_step(uint32_t& partial, uint8_t& left, uint32_t& min, uint8_t byte) {
  Utf8Step r;
  if (left == 0) {
    if (byte < 0x80) {
      r.kind = Utf8Step::kCodePoint;
      r.cp = byte;
      return r;
    }
    const int n = (byte & 0xE0) == 0xC0 ? 1 : (byte & 0xF0) == 0xE0 ? 2 : (byte & 0xF8) == 0xF0 ? 3 : -1;
    if (n < 0 || byte == 0xC0 || byte == 0xC1) return r;
    partial = byte & (n == 1 ? 0x1F : n == 2 ? 0x0F : 0x07);
    left = (uint8_t)n;
    min = n == 1 ? 0x80 : n == 2 ? 0x800 : 0x10000;
  } else {
    if ((byte & 0xC0) != 0x80) return r;
    partial = (partial << 6) | (byte & 0x3F);
    if (--left == 0) {
      const uint32_t cp = partial;
      partial = 0;
      const uint32_t least = min;
      min = 0;  // a state between code points is the same whatever came before (the cache's key)
      // Overlong forms and surrogates are not UTF-8: the decoded text would differ from these bytes.
      if (cp > 0x10FFFF || cp < least || (cp >= 0xD800 && cp <= 0xDFFF)) return r;
      r.kind = Utf8Step::kCodePoint;
      r.cp = cp;
      return r;
    }
  }
  // The code points this prefix may still become (no overlong form, nothing past U+10FFFF).
  r.lo = std::max(partial << (6 * left), min);
  r.hi = std::min((partial << (6 * left)) | ((1u << (6 * left)) - 1), 0x10FFFFu);
  // Surrogates are no code point either: a prefix that can only become one (ED A0..BF) is
  // invalid now, not after its last byte (a negated class "accepts" them, and the state would
  // then have no byte left to take: a dead end). ED alone may still become D000..D7FF.
  if (r.lo >= 0xD800 && r.hi <= 0xDFFF) return r;
  if (r.lo < 0xD800 && r.hi >= 0xD800 && r.hi <= 0xDFFF) r.hi = 0xD7FF;
  if (r.lo <= r.hi) r.kind = Utf8Step::kPrefix;
  return r;
}

bool GrammarState::feed(const Grammar::Impl& g, uint8_t byte) {
  const Utf8Step u = utf8_step(partial, partial_left, partial_min, byte);
  if (u.kind == Utf8Step::kInvalid) return stacks.clear(), false;
  if (u.kind == Utf8Step::kPrefix) {
    // Some stack must take a code point that starts this way.
    for (const ParseStack& st : stacks)
      if (!st.empty() && g.accepts_some(g.symbols[(size_t)st.back()], u.lo, u.hi)) return true;
    return stacks.clear(), false;
  }
  return advance(g, u.cp);
}

bool GrammarState::advance(const Grammar::Impl& g, uint32_t cp) {
  std::vector<ParseStack> next;
  for (const ParseStack& st : stacks) {
    if (st.empty() || !g.accepts(g.symbols[(size_t)st.back()], cp)) continue;
    ParseStack moved = st;
    ++moved.back();
    expand(g, std::move(moved), next);
  }
  normalise(next);
  stacks = std::move(next);
  return !stacks.empty();
}

bool GrammarState::feed(const Grammar::Impl& g, std::string_view bytes) {
  for (char c : bytes)
    if (!feed(g, (uint8_t)c)) return false;
  return true;
}

bool GrammarState::accepting() const {
  return partial_left == 0 && !stacks.empty() && stacks.front().empty();  // sorted: an empty stack is first
}

bool GrammarState::finished() const {
  return partial_left == 0 && !stacks.empty() &&
         std::all_of(stacks.begin(), stacks.end(), [](const ParseStack& s) { return s.empty(); });
}

std::string GrammarState::key() const {
  std::string k;
  k.push_back((char)partial_left);
  k.append(reinterpret_cast<const char*>(&partial), sizeof partial);
  k.append(reinterpret_cast<const char*>(&partial_min), sizeof partial_min);
  for (const ParseStack& st : stacks) {
    const uint32_t n = (uint32_t)st.size();
    k.append(reinterpret_cast<const char*>(&n), sizeof n);
    k.append(reinterpret_cast<const char*>(st.data()), st.size() * sizeof(int32_t));
  }
  return k;
}

}  // namespace spore::nlp::detail
