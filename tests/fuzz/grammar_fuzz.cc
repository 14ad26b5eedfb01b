// libFuzzer target: GBNF grammars (src/nlp/grammar/), then matching text against them.
// Input: the grammar text up to the first \x00, then bytes fed to the matcher.
//
// Contract checked: a grammar either compiles or throws kValue (nothing else, no crash, bounded
// time through GrammarLimits); feeding bytes either advances or reports a dead end or throws
// kValue (too many parse stacks), and an accepting state never holds a partial code point.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "nlp/grammar/matcher.h"
#include "spore/error.h"
#include "spore/nlp/grammar.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spore;
  const std::string in(reinterpret_cast<const char*>(data), size);
  const size_t split = in.find('\0');
  const std::string text = in.substr(0, split);
  const std::string feed = split == std::string::npos ? std::string() : in.substr(split + 1);
  nlp::GrammarLimits limits;
  limits.max_rules = 2000;
  limits.max_elements = 20000;
  limits.max_repetition = 200;
  limits.max_stacks = 256;
  std::shared_ptr<const nlp::Grammar> g;
  try {
    g = nlp::Grammar::from_gbnf(text, limits);
  } catch (const Error& e) {
    fuzz::require(e.code() == ErrorCode::kValue, "a bad grammar throws kValue");
    return 0;
  }
  try {
    auto s = nlp::detail::GrammarState::start(g->impl());
    for (char c : feed) {
      if (!s.feed(g->impl(), (uint8_t)c)) break;
      if (s.accepting()) fuzz::require(s.partial_left == 0, "accepting with a partial code point");
    }
  } catch (const Error& e) {
    fuzz::require(e.code() == ErrorCode::kValue, "matching throws kValue only");
  }
  return 0;
}
