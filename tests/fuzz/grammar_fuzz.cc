// libFuzzer target: GBNF grammars (src/nlp/grammar/), then matching text against them.
// Input: the grammar text up to the first \x00, then bytes fed to the matcher.
//
// Contract checked: a grammar either compiles or throws kValue (nothing else, no crash, bounded
// time through GrammarLimits); feeding bytes either advances or reports a dead end or throws
// kValue (too many parse stacks), and an accepting state never holds a partial code point. Then
// the token mask (the flat trie's walk with its state tables, NOTE [Grammars]) at the state the
// bytes reached equals a brute force over a small vocabulary (every single byte, so any input can
// be replayed token by token, and multi-byte tokens), and allows() equals the mask's bit.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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
    static const auto trie = [] {
      std::vector<std::optional<std::string>> vocab;
      for (int b = 0; b < 256; ++b) vocab.push_back(std::string(1, (char)b));
      for (const char* t : {"ab", "abc", "{\"", "\":", "\",\"", "12", "true", " \"", "\xC3\xA9", "\xE4\xB8",
                            "\xE4\xB8\x80", "\xE4\xB8\x80" "a", "\xF0\x9F\x98\x80", "\xF0\x9F", "\xED\x9F\xBF",
                            "\xED\xA0\x80", "\xC0\x80", "a\xCE\xB1", "\xCE\xB1\xCE\xB2", "\x80"})
        vocab.push_back(std::string(t));
      vocab.push_back(std::nullopt);  // a special token: the end id below
      return std::make_shared<const nlp::detail::TokenTrie>(vocab, (int64_t)vocab.size());
    }();
    const int32_t end_id = (int32_t)trie->vocab() - 1;
    nlp::detail::GrammarMatcher m(g, trie, {end_id});
    size_t fed = 0;
    for (char c : feed) {
      if (!s.feed(g->impl(), (uint8_t)c)) break;
      if (s.accepting()) fuzz::require(s.partial_left == 0, "accepting with a partial code point");
      m.accept((uint8_t)c);  // the single-byte token
      ++fed;
    }
    if (fed == feed.size()) {
      nlp::detail::GrammarMatcher fresh(g, trie, {end_id});  // allows() without a mask computed
      for (char c : feed) fresh.accept((uint8_t)c);
      const std::vector<uint64_t>& mask = m.allowed();
      for (int32_t id = 0; id < (int32_t)trie->vocab(); ++id) {
        bool want = s.accepting() && id == end_id;
        if (const std::string* b = trie->bytes_of(id)) {
          auto copy = s;
          want = copy.feed(g->impl(), *b);
        }
        fuzz::require(nlp::detail::GrammarMatcher::test(mask, id) == want, "the mask is the brute force");
        fuzz::require(fresh.allows(id) == want, "allows() is the mask's bit");
      }
    }
  } catch (const Error& e) {
    fuzz::require(e.code() == ErrorCode::kValue, "matching throws kValue only");
  }
  return 0;
}
