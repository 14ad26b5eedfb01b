// Speculative decoding (NOTE [Speculative decoding]) over test models whose logits the test
// computes itself (generate_test_lm.h): prompt lookup's proposals, greedy output identical to the
// plain greedy reference (so the cache really rolls back past a rejected draft: the test model
// reads its history back from the cache rows), fewer forward passes than tokens, and under
// sampling the first speculated position distributed exactly as the model's own distribution
// (a chi-square test against that distribution, computed here in float64), for prompt lookup's
// point-mass drafts and for a draft model's own distribution.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <numeric>

#include "nlp/generate/ngram_draft.h"
#include "nlp/generate_test_lm.h"
#include "spore/error.h"
#include "spore/nlp/generate.h"

namespace {

using namespace spore;
using namespace spore::nlp;
using spore::test::hash_logits;
using spore::test::HistoryLM;
using spore::test::loaded;

TEST(SpeculativeNgram, ProposesWhatFollowedTheLatestMatchOfTheLongestSuffix) {
  using detail::ngram_draft;
  const std::vector<int32_t> h = {1, 2, 3, 4, 9, 9, 1, 2, 3};
  // The suffix 1 2 3 occurred at 0; 4 9 9 1 followed it.
  EXPECT_EQ(ngram_draft(h, 1, 3, 4), (std::vector<int32_t>{4, 9, 9, 1}));
  // Never past the end of the history.
  EXPECT_EQ(ngram_draft(h, 1, 3, 50), (std::vector<int32_t>{4, 9, 9, 1, 2, 3}));
  // The latest occurrence wins: 7 5 ... 7 6 ... 7 -> 6 follows the nearer one.
  EXPECT_EQ(ngram_draft(std::vector<int32_t>{7, 5, 0, 7, 6, 0, 7}, 1, 3, 1), (std::vector<int32_t>{6}));
  // A longer suffix beats a nearer shorter one: 8 1 2 matched at 0 (-> 3), not 1 2 at 5 (-> 4).
  EXPECT_EQ(ngram_draft(std::vector<int32_t>{8, 1, 2, 3, 0, 1, 2, 4, 8, 1, 2}, 1, 3, 1), (std::vector<int32_t>{3}));
  // ngram_min bounds the fallback; no match, no draft.
  EXPECT_TRUE(ngram_draft(std::vector<int32_t>{1, 2, 3, 4, 5, 3}, 2, 3, 4).empty());
  EXPECT_EQ(ngram_draft(std::vector<int32_t>{1, 2, 3, 4, 5, 3}, 1, 3, 2), (std::vector<int32_t>{4, 5}));
  EXPECT_TRUE(ngram_draft(std::vector<int32_t>{5}, 1, 3, 4).empty());
}

constexpr int64_t kVocab = 64;

// A model that mostly copies: after token t it favours what followed t's latest earlier
// occurrence, with history-hashed noise strong enough that it sometimes does not (so drafts are
// both accepted and rejected).
std::vector<float> copy_logits(std::span<const int32_t> h, float noise) {
  std::vector<float> l = hash_logits(h, kVocab);
  for (float& x : l) x *= noise;
  const int32_t last = h.back();
  int32_t target = (last * 7 + 3) % (int32_t)kVocab;
  for (int64_t j = (int64_t)h.size() - 2; j >= 0; --j)
    if (h[(size_t)j] == last) {
      target = h[(size_t)j + 1];
      break;
    }
  l[(size_t)target] += 2.0f;
  return l;
}

std::shared_ptr<HistoryLM> copy_lm(float noise = 0.45f) {
  return std::make_shared<HistoryLM>(kVocab, [noise](std::span<const int32_t> h) { return copy_logits(h, noise); });
}

// Greedy continuation computed here, without the engine.
std::vector<int32_t> reference_greedy(std::vector<int32_t> h, int64_t n, float noise = 0.45f) {
  std::vector<int32_t> out;
  for (int64_t i = 0; i < n; ++i) {
    const auto l = copy_logits(h, noise);
    const int32_t best = (int32_t)(std::max_element(l.begin(), l.end()) - l.begin());
    out.push_back(best);
    h.push_back(best);
  }
  return out;
}

const std::vector<int32_t> kPrompt = {3, 9, 14, 3, 27, 40, 9, 14, 51, 2, 3, 27, 40, 61, 9, 14, 51, 2, 33, 3};

GenerateOptions greedy(int64_t n, SpeculativeOptions::Type type, int64_t draft_max = 6) {
  GenerateOptions o;
  o.max_tokens = n;
  o.sampling.temperature = 0;
  o.apply_model_defaults = false;
  o.speculative.type = type;
  o.speculative.draft_max = draft_max;
  return o;
}

TEST(SpeculativeDecoding, GreedyNgramEqualsPlainGreedyInFewerForwardPasses) {
  for (int64_t draft_max : {1, 3, 8}) {
    auto lm = copy_lm();
    const LoadedModel m = loaded(lm);
    const int64_t n = 60;
    const GenerationResult r = generate_ids(m, kPrompt, greedy(n, SpeculativeOptions::Type::kNgram, draft_max));
    EXPECT_EQ(r.tokens, reference_greedy(kPrompt, n)) << "draft_max " << draft_max;
    // Both outcomes happened: drafts kept and drafts rejected (else the test proves less).
    EXPECT_GT(r.timings.accepted_tokens, 0);
    EXPECT_LT(r.timings.accepted_tokens, r.timings.drafted_tokens);
    // Every accepted token is a forward pass saved: one prefill, then one per step.
    EXPECT_EQ((int64_t)lm->calls.size(), 1 + (n - 1) - r.timings.accepted_tokens) << "draft_max " << draft_max;
    EXPECT_NEAR(r.timings.acceptance_rate(), (double)r.timings.accepted_tokens / (double)r.timings.drafted_tokens, 1e-12);
  }
}

TEST(SpeculativeDecoding, BatchedSpeculativeAndPlainSequencesEachMatchTheirReference) {
  auto lm = copy_lm();
  const LoadedModel m = loaded(lm);
  EngineOptions eo;
  eo.slots = 3;
  eo.context = 96;
  eo.prefill_chunk = 7;  // prefill pieces interleave with the others' speculative steps
  Engine e(m, eo);
  std::vector<std::vector<int32_t>> prompts = {kPrompt, {5, 6, 7, 5, 6, 8, 5}, {40, 41, 40, 41, 42, 40}, {1, 2, 1, 2, 1}};
  std::vector<uint64_t> ids;
  for (size_t i = 0; i < prompts.size(); ++i)
    ids.push_back(e.add(prompts[i], greedy(30 + (int64_t)i, i % 2 ? SpeculativeOptions::Type::kNone : SpeculativeOptions::Type::kNgram, 5)));
  std::map<uint64_t, std::vector<int32_t>> got;
  for (int guard = 0; !e.idle() && guard < 1000; ++guard)
    for (const SequenceEvent& ev : e.step())
      if (ev.token) got[ev.sequence].push_back(*ev.token);
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(got[ids[i]], reference_greedy(prompts[i], 30 + (int64_t)i)) << "sequence " << i;
    if (i % 2) {
      EXPECT_EQ(e.timings(ids[i]).drafted_tokens, 0);
    }
  }
  EXPECT_GT(e.timings(ids[0]).accepted_tokens, 0);
}

TEST(SpeculativeDecoding, StopsAtMaxTokensAndContextLikePlainDecoding) {
  auto lm = copy_lm();
  const LoadedModel m = loaded(lm);
  // max_tokens: never more tokens than asked, however long the draft.
  const GenerationResult r = generate_ids(m, kPrompt, greedy(7, SpeculativeOptions::Type::kNgram, 16));
  EXPECT_EQ(r.tokens, reference_greedy(kPrompt, 7));
  EXPECT_EQ(r.finish, FinishReason::kLength);
  // The context: the chunk never runs past the cache (HistoryLM throws if it does).
  EngineOptions eo;
  eo.context = (int64_t)kPrompt.size() + 9;
  const GenerationResult c = generate_ids(m, kPrompt, greedy(100, SpeculativeOptions::Type::kNgram, 16), {}, eo);
  EXPECT_EQ(c.tokens, reference_greedy(kPrompt, (int64_t)c.tokens.size()));
  EXPECT_EQ(c.finish, FinishReason::kLength);
  EXPECT_EQ((int64_t)kPrompt.size() + (int64_t)c.tokens.size(), eo.context + 1);  // as without speculation
  EXPECT_EQ(generate_ids(m, kPrompt, greedy(100, SpeculativeOptions::Type::kNone), {}, eo).tokens, c.tokens);
}

TEST(SpeculativeDecoding, BadOptionsAreTypedErrors) {
  const LoadedModel m = loaded(copy_lm());
  Engine e(m);
  GenerateOptions o = greedy(4, SpeculativeOptions::Type::kNgram, 0);
  EXPECT_THROW(e.add(kPrompt, o), Error);
  o.speculative.draft_max = 4;
  o.speculative.ngram_min = 3;
  o.speculative.ngram_max = 2;
  EXPECT_THROW(e.add(kPrompt, o), Error);
  // A draft model is needed for "draft".
  try {
    e.add(kPrompt, greedy(4, SpeculativeOptions::Type::kDraft));
    ADD_FAILURE() << "no error";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), ErrorCode::kValue);
    EXPECT_NE(std::string(err.what()).find("draft model"), std::string::npos) << err.what();
  }
  EXPECT_EQ(parse_speculative_type("ngram"), SpeculativeOptions::Type::kNgram);
  EXPECT_EQ(parse_speculative_type("draft-simple"), SpeculativeOptions::Type::kDraft);
  EXPECT_THROW(parse_speculative_type("medusa"), Error);
}

// A draft model: the copy model with other noise, so it agrees with the target often, not always.
TEST(SpeculativeDecoding, GreedyDraftModelEqualsPlainGreedy) {
  auto lm = copy_lm();
  auto draft = std::make_shared<LoadedModel>(loaded(copy_lm(0.9f)));
  const LoadedModel m = loaded(lm);
  EngineOptions eo;
  eo.draft = draft;
  eo.slots = 2;
  eo.context = 96;
  eo.prefill_chunk = 8;  // the draft's catch-up of the prompt goes in pieces too
  Engine e(m, eo);
  const uint64_t a = e.add(kPrompt, greedy(50, SpeculativeOptions::Type::kDraft, 4));
  const uint64_t b = e.add({5, 6, 7, 5, 6, 8, 5}, greedy(40, SpeculativeOptions::Type::kDraft, 3));
  std::map<uint64_t, std::vector<int32_t>> got;
  for (int guard = 0; !e.idle() && guard < 1000; ++guard)
    for (const SequenceEvent& ev : e.step())
      if (ev.token) got[ev.sequence].push_back(*ev.token);
  EXPECT_EQ(got[a], reference_greedy(kPrompt, 50));
  EXPECT_EQ(got[b], reference_greedy({5, 6, 7, 5, 6, 8, 5}, 40));
  for (uint64_t id : {a, b}) {
    EXPECT_GT(e.timings(id).accepted_tokens, 0);
    EXPECT_LT(e.timings(id).accepted_tokens, e.timings(id).drafted_tokens);
  }
  // A second round in the same slots: the draft model's rows of a slot are not trusted across sequences.
  const uint64_t c = e.add({5, 6, 7, 5, 6, 8, 5, 1}, greedy(20, SpeculativeOptions::Type::kDraft, 4));
  got.clear();
  for (int guard = 0; !e.idle() && guard < 1000; ++guard)
    for (const SequenceEvent& ev : e.step())
      if (ev.token) got[ev.sequence].push_back(*ev.token);
  EXPECT_EQ(got[c], reference_greedy({5, 6, 7, 5, 6, 8, 5, 1}, 20));
}

TEST(SpeculativeDecoding, ADraftModelOfAnotherVocabularyIsRefused) {
  const LoadedModel m = loaded(copy_lm());
  auto other = std::make_shared<LoadedModel>(loaded(std::make_shared<HistoryLM>(
      kVocab + 1, [](std::span<const int32_t> h) { return hash_logits(h, kVocab + 1); })));
  EngineOptions eo;
  eo.draft = other;
  try {
    Engine e(m, eo);
    ADD_FAILURE() << "no error";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), ErrorCode::kValue);
    EXPECT_NE(std::string(err.what()).find("vocabulary"), std::string::npos) << err.what();
  }
}

// --- Sampling: the distribution of a speculated position --------------------------------------

constexpr int64_t kSmallVocab = 8;
// The prompt, then a forced first token (2); at the second generated position the model's logits
// are kSecond, and prompt lookup proposes 5 there (the prompt has 1 2 5).
const std::vector<int32_t> kSmallPrompt = {3, 1, 2, 5, 6, 7, 1};
const std::vector<float> kSecond = {0.1f, -0.5f, 0.3f, 0.2f, -1.0f, 0.9f, 0.0f, 0.4f};

std::vector<float> small_logits(std::span<const int32_t> h, const std::vector<float>& second) {
  std::vector<float> l((size_t)kSmallVocab, 0.0f);
  if (h.size() == kSmallPrompt.size()) {
    l[2] = 60.0f;  // exp(-60): the other tokens never come up
    return l;
  }
  if (h.size() == kSmallPrompt.size() + 1) return second;
  return l;
}

// Softmax at temperature 1 in float64, independent of the sampler.
std::vector<double> softmax(const std::vector<float>& l) {
  std::vector<double> p(l.size());
  double m = *std::max_element(l.begin(), l.end()), sum = 0;
  for (size_t i = 0; i < l.size(); ++i) sum += (p[i] = std::exp((double)l[i] - m));
  for (double& v : p) v /= sum;
  return p;
}

// Pearson's statistic of the counts against the expected distribution.
double chi_square(const std::vector<int64_t>& counts, const std::vector<double>& p, int64_t n) {
  double x = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double e = p[i] * (double)n;
    x += ((double)counts[i] - e) * ((double)counts[i] - e) / e;
  }
  return x;
}

// Runs n seeded sequences of three tokens; counts the second token.
std::vector<int64_t> second_token_counts(const LoadedModel& m, const EngineOptions& eo, SpeculativeOptions::Type type,
                                         int64_t n, int64_t* drafted, int64_t* accepted) {
  Engine e(m, eo);
  std::map<uint64_t, std::vector<int32_t>> got;
  std::vector<uint64_t> ids;
  for (int64_t i = 0; i < n; ++i) {
    GenerateOptions o;
    o.max_tokens = 3;  // the second token is the only speculated one (room = 3 - 1 - 1)
    o.apply_model_defaults = false;
    o.ignore_eos = true;
    o.sampling.temperature = 1.0;
    o.sampling.seed = 1000 + (uint64_t)i;
    o.speculative.type = type;
    ids.push_back(e.add(kSmallPrompt, o));
  }
  for (int guard = 0; !e.idle() && guard < 100000; ++guard)
    for (const SequenceEvent& ev : e.step())
      if (ev.token) got[ev.sequence].push_back(*ev.token);
  std::vector<int64_t> counts((size_t)kSmallVocab, 0);
  *drafted = *accepted = 0;
  for (uint64_t id : ids) {
    const std::vector<int32_t>& t = got[id];
    EXPECT_EQ(t.size(), 3u);
    EXPECT_EQ(t[0], 2);
    ++counts[(size_t)t[1]];
    *drafted += e.timings(id).drafted_tokens;
    *accepted += e.timings(id).accepted_tokens;
  }
  return counts;
}

// The 0.1 % critical value of chi-square with 7 degrees of freedom. The seeds are fixed, so the
// test is deterministic; a wrong rule (always keeping the draft, or on rejection drawing from p
// instead of max(0, p - q)) moves the draft's share by 0.2 or more and the statistic into the
// hundreds at these counts.
constexpr double kChi2Df7 = 24.32;
constexpr int64_t kSamples = 3000;

TEST(SpeculativeDecoding, SampledPromptLookupKeepsTheModelsDistribution) {
  auto lm = std::make_shared<HistoryLM>(kSmallVocab, [](std::span<const int32_t> h) { return small_logits(h, kSecond); });
  const LoadedModel m = loaded(lm);
  EngineOptions eo;
  eo.slots = 16;
  eo.context = 16;
  int64_t drafted = 0, accepted = 0;
  const auto counts = second_token_counts(m, eo, SpeculativeOptions::Type::kNgram, kSamples, &drafted, &accepted);
  const std::vector<double> p = softmax(kSecond);
  EXPECT_EQ(drafted, kSamples);  // every sequence verified the proposal 5 once
  // A point-mass draft is kept with probability p(5): within 4.5 standard deviations.
  EXPECT_NEAR((double)accepted / kSamples, p[5], 4.5 * std::sqrt(p[5] * (1 - p[5]) / kSamples));
  EXPECT_LT(chi_square(counts, p, kSamples), kChi2Df7) << "counts against the model's distribution";
}

TEST(SpeculativeDecoding, SampledDraftModelKeepsTheModelsDistribution) {
  auto lm = std::make_shared<HistoryLM>(kSmallVocab, [](std::span<const int32_t> h) { return small_logits(h, kSecond); });
  // The draft's own distribution at that position: quite unlike the target's.
  const std::vector<float> draft_second = {1.2f, 0.0f, -0.8f, 0.9f, 0.5f, -0.3f, 1.5f, -1.0f};
  auto draft = std::make_shared<LoadedModel>(loaded(std::make_shared<HistoryLM>(
      kSmallVocab, [draft_second](std::span<const int32_t> h) { return small_logits(h, draft_second); })));
  const LoadedModel m = loaded(lm);
  EngineOptions eo;
  eo.slots = 16;
  eo.context = 16;
  eo.draft = draft;
  int64_t drafted = 0, accepted = 0;
  const auto counts = second_token_counts(m, eo, SpeculativeOptions::Type::kDraft, kSamples, &drafted, &accepted);
  const std::vector<double> p = softmax(kSecond), q = softmax(draft_second);
  EXPECT_EQ(drafted, kSamples);
  // The acceptance probability is sum_x q(x) min(1, p(x)/q(x)) = sum_x min(p(x), q(x)).
  double keep = 0;
  for (size_t i = 0; i < p.size(); ++i) keep += std::min(p[i], q[i]);
  EXPECT_NEAR((double)accepted / kSamples, keep, 4.5 * std::sqrt(keep * (1 - keep) / kSamples));
  EXPECT_LT(chi_square(counts, p, kSamples), kChi2Df7) << "counts against the model's distribution";
}

}  // namespace
