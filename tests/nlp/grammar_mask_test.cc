// The token mask's machinery (NOTE [Grammars]): the flat trie against the vocabulary it was built
// from, masks on Qwen2.5's vocabulary (151,643 ranks) against a brute force through multi-byte
// code points, partial UTF-8 states and bounded strings, the single-token check the sampler's
// unmasked draw uses against the mask, and that draw plus a masked redraw against the masked
// distribution.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "grammar_brute_force.h"
#include "nlp/generate/sampler.h"
#include "nlp/grammar/matcher.h"
#include "spore/nlp/grammar.h"

namespace spore::nlp {
namespace {

using detail::GrammarMatcher;
using detail::GrammarState;
using detail::TokenTrie;
using test::expect_mask_is_brute_force;

const std::string kTokenizers = std::string(SPORE_SOURCE_DIR) + "/tests/fixtures/tokenizers/";

std::shared_ptr<const TokenTrie> trie_of(const Tokenizer& tok) {
  return std::make_shared<const TokenTrie>(detail::token_bytes(tok), tok.vocab_size());
}

// Every node's path spells the bytes of the tokens listed there, every token is listed once, and
// skip() is the first later node no deeper than it (the pre-order's definition of a subtree).
void expect_trie_is_the_vocabulary(const Tokenizer& tok) {
  const auto trie = trie_of(tok);
  std::vector<std::string> path(trie->max_depth() + 1);
  std::vector<int> seen((size_t)trie->vocab(), 0);
  std::vector<size_t> open;  // nodes whose subtree has not ended, by depth
  for (size_t i = 0; i < trie->size(); ++i) {
    const uint32_t d = trie->depth(i);
    ASSERT_GE(d, 1u);
    ASSERT_LE(d, open.size() + 1) << "node " << i << " skips a level";
    while (open.size() >= d) {
      ASSERT_EQ(trie->skip(open.back()), i) << "node " << open.back();
      open.pop_back();
    }
    open.push_back(i);
    path[d] = path[d - 1] + (char)trie->byte(i);
    for (int32_t id : trie->tokens(i)) {
      ASSERT_NE(trie->bytes_of(id), nullptr);
      EXPECT_EQ(*trie->bytes_of(id), path[d]) << "token " << id;
      ++seen[(size_t)id];
    }
  }
  for (size_t n : open) EXPECT_EQ(trie->skip(n), trie->size());
  const auto bytes = detail::token_bytes(tok);
  for (size_t id = 0; id < seen.size(); ++id)
    EXPECT_EQ(seen[id], id < bytes.size() && bytes[id] && !bytes[id]->empty() ? 1 : 0) << "token " << id;
}

TEST(GrammarMask, FlatTrieIsTheVocabulary) {
  expect_trie_is_the_vocabulary(Tokenizer::from_file(kTokenizers + "tiny_smollm"));
  expect_trie_is_the_vocabulary(Tokenizer::from_file(kTokenizers + "qwen3"));
}

int32_t token_with_bytes(const TokenTrie& trie, const std::string& bytes) {
  for (int32_t id = 0; id < trie.vocab(); ++id)
    if (const std::string* b = trie.bytes_of(id); b && *b == bytes) return id;
  return -1;
}

// Multi-byte classes (the walk's signature transitions), a state cut inside a code point (the
// walk's carried UTF-8 prefix), bounded strings (a new state per character) on Qwen's vocabulary.
TEST(GrammarMask, QwenMasksEqualBruteForceThroughUtf8) {
  const Tokenizer tok = Tokenizer::from_file(kTokenizers + "qwen3");
  const auto trie = trie_of(tok);
  struct Case {
    std::string gbnf, text;
    std::vector<size_t> check_after;  // token counts after which the mask is compared
  };
  const std::vector<Case> cases = {
      {R"(root ::= "[" [一-龥]{1,6} ("|" [^a-z一-龥]{0,3})? "]")", "[数据中心|👍é]", {0, 1, 2, 3, 5}},
      {json_schema_to_gbnf(R"({"type":"object","properties":{"name":{"type":"string","maxLength":5},
          "tag":{"enum":["café","naïve","日本"]}},"required":["name","tag"],"additionalProperties":false})"),
       R"({"name":"héllo","tag":"日本"})", {0, 2, 3, 4, 5, 7}},
  };
  for (const Case& c : cases) {
    const auto g = Grammar::from_gbnf(c.gbnf);
    GrammarMatcher m(g, trie, {});
    GrammarState state = GrammarState::start(g->impl());
    const std::vector<int32_t> ids = tok.encode(c.text, false);
    for (size_t i = 0; i <= ids.size(); ++i) {
      if (std::find(c.check_after.begin(), c.check_after.end(), i) != c.check_after.end())
        expect_mask_is_brute_force(*g, *trie, m, state, {}, c.text + " after " + std::to_string(i) + " tokens");
      if (i == ids.size()) break;
      m.accept(ids[i]);
      ASSERT_TRUE(state.feed(g->impl(), *trie->bytes_of(ids[i])));
    }
  }
  // A token boundary inside a code point: "数" is E6 95 B0; its first byte alone is a token.
  const auto g = Grammar::from_gbnf(R"(root ::= [数-数] [a-c] | [一-龥]+ "!")");
  const int32_t lead = token_with_bytes(*trie, "\xE6");
  ASSERT_GE(lead, 0);
  GrammarMatcher m(g, trie, {});
  GrammarState state = GrammarState::start(g->impl());
  m.accept(lead);
  ASSERT_TRUE(state.feed(g->impl(), "\xE6"));
  expect_mask_is_brute_force(*g, *trie, m, state, {}, "after a lead byte");
}

// allows() (one token's bytes fed to a copy) is the mask's bit, before and after allowed() ran.
TEST(GrammarMask, AllowsIsTheMasksBit) {
  const Tokenizer tok = Tokenizer::from_file(kTokenizers + "tiny_smollm");
  const auto trie = trie_of(tok);
  const auto g = Grammar::from_gbnf(json_schema_to_gbnf(
      R"({"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"}}},"required":["a"]})"));
  const int32_t eos = *tok.token_to_id("<|endoftext|>");
  GrammarMatcher masked(g, trie, {eos}), fresh(g, trie, {eos});
  const std::vector<int32_t> ids = tok.encode(R"({"a": [12, 3]})", false);
  for (size_t i = 0; i <= ids.size(); ++i) {
    int agree = 0;
    for (int32_t id = 0; id < trie->vocab(); ++id) {
      const bool bit = GrammarMatcher::test(masked.allowed(), id);
      ASSERT_EQ(fresh.allows(id), bit) << "token " << id << " after " << i;
      ASSERT_EQ(masked.allows(id), bit) << "token " << id << " after " << i;
      agree += bit;
    }
    EXPECT_GT(agree, 0);
    if (i == ids.size()) break;
    masked.accept(ids[i]);
    fresh.accept(ids[i]);
  }
  EXPECT_TRUE(fresh.allows(eos));
}

// The engine's constrained step without truncating filters: an unmasked draw kept when the
// grammar allows it, else a masked draw. Its frequencies must be the masked distribution.
TEST(GrammarMask, UnmaskedDrawThenMaskedRedrawIsTheMaskedDistribution) {
  const Tokenizer tok = Tokenizer::from_file(kTokenizers + "tiny_smollm");
  const auto trie = trie_of(tok);
  const auto g = Grammar::from_gbnf(R"(root ::= [a-m]+)");
  GrammarMatcher m(g, trie, {});
  SamplingOptions o;
  o.temperature = 0.7;
  o.seed = 11;
  detail::Sampler s(o, trie->vocab());
  ASSERT_TRUE(s.unmasked_draw_is_exact());
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> row((size_t)trie->vocab());
  for (float& x : row) x = normal(rng);
  const std::vector<double> want = s.distribution(row, &m.allowed());
  const int n = 60000;
  std::map<int32_t, int> count;
  int redraws = 0;
  for (int i = 0; i < n; ++i) {
    int32_t id = s.sample(row).id;
    if (!m.allows(id)) {
      id = s.sample(row, &m.allowed()).id;
      ++redraws;
    }
    ++count[id];
  }
  EXPECT_GT(redraws, n / 10);  // both branches were taken
  EXPECT_LT(redraws, n);
  double tv = 0;
  for (int32_t id = 0; id < trie->vocab(); ++id) tv += std::abs(want[(size_t)id] - (double)count[id] / n);
  EXPECT_LT(tv / 2, 0.03) << "total variation against the masked distribution";
  // With a truncating filter the shortcut is not exact, and the engine does not take it.
  o.top_k = 5;
  EXPECT_FALSE(detail::Sampler(o, trie->vocab()).unmasked_draw_is_exact());
  o.top_k = 0;
  o.temperature = 0;
  o.top_p = 0.5;
  EXPECT_TRUE(detail::Sampler(o, trie->vocab()).unmasked_draw_is_exact());  // greedy: the argmax
}

}  // namespace
}  // namespace spore::nlp
