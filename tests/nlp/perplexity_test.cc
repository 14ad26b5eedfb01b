// spore::nlp::perplexity (NOTE [Perplexity]) on the tiny llama fixture against a float64
// evaluation of llama-perplexity's formula over transformers' own float32 logits
// (tests/fixtures/llm/llama/reference.safetensors, tools/make_llm_fixtures.py): chunking, BOS at
// each chunk's start, the second half scored, the running estimate and the error bar.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model_test_util.h"
#include "spore/error.h"
#include "spore/nlp/perplexity.h"

namespace {

using namespace spore;
using namespace spore::test::llm;

struct Expected {
  double ppl, err, first_chunk_ppl;
};

// The formula in float64 over the reference rows `first`..ctx-2 of prompt 0, which both chunks
// of the test's tokens reproduce exactly (see below).
Expected float64_reference(const Reference& ref, int64_t ctx, int chunks) {
  const Tensor& logits = ref.logits.at("logits_0");
  const std::vector<float> v = logits.to_vector<float>();
  const int64_t vocab = logits.size(1);
  const std::vector<int32_t>& p = ref.prompts[0];
  std::vector<double> nll;
  for (int64_t pos = ctx / 2; pos < ctx - 1; ++pos) {
    const float* row = v.data() + pos * vocab;
    double m = row[0];
    for (int64_t i = 0; i < vocab; ++i) m = std::max(m, (double)row[i]);
    double s = 0;
    for (int64_t i = 0; i < vocab; ++i) s += std::exp((double)row[i] - m);
    nll.push_back(m + std::log(s) - row[p[(size_t)pos + 1]]);
  }
  double sum = 0, sum2 = 0;
  for (double x : nll) sum += x;
  const double first_chunk_ppl = std::exp(sum / nll.size());
  const size_t per_chunk = nll.size();
  for (int c = 1; c < chunks; ++c)
    for (size_t i = 0; i < per_chunk; ++i) nll.push_back(nll[i]);
  sum = 0;
  for (double x : nll) sum += x, sum2 += x * x;
  const double n = (double)nll.size(), mean = sum / n;
  const double ppl = std::exp(mean);
  return {ppl, std::sqrt((sum2 / n - mean * mean) / (n - 1)) * ppl, first_chunk_ppl};
}

nlp::LoadedModel tiny_llama() {
  nlp::LoadOptions lo;
  lo.numerics = nlp::LoadOptions::Numerics::kReference;
  return nlp::load_model(fixture_model("llama", false), lo);
}

// Prompt 0 is [BOS=1, ...]: the text below is prompt 0, then prompt 0 with its BOS replaced by
// another token; llama-perplexity's BOS at the second chunk's start restores prompt 0 there, so
// both chunks have transformers' logits_0 as their exact logits.
std::vector<int32_t> two_chunks(const Reference& ref) {
  std::vector<int32_t> t = ref.prompts[0];
  t.push_back(5);
  t.insert(t.end(), ref.prompts[0].begin() + 1, ref.prompts[0].end());
  return t;
}

TEST(Perplexity, MatchesFloat64FormulaOverTransformersLogits) {
  const Reference ref = load_reference("llama");
  ASSERT_EQ(ref.prompts[0].size(), 7u);
  ASSERT_EQ(ref.prompts[0][0], 1);
  auto m = tiny_llama();
  const auto tokens = two_chunks(ref);
  const int64_t ctx = 7;
  const Expected want = float64_reference(ref, ctx, 2);
  for (int64_t batch : std::vector<int64_t>{0, 3, 2 * ctx}) {  // one chunk per call, a chunk in pieces, chunks side by side
    nlp::PerplexityOptions o;
    o.context = ctx;
    o.batch = batch;
    o.kv_dtype = DType::kFloat32;
    int calls = 0;
    const nlp::PerplexityResult r =
        nlp::perplexity(*m.lm, tokens, 1, o, [&](int64_t i, int64_t n, const nlp::PerplexityStats&) {
          EXPECT_EQ(i, calls++);
          EXPECT_EQ(n, 2);
        });
    SCOPED_TRACE("batch " + std::to_string(batch));
    EXPECT_EQ(calls, 2);
    EXPECT_EQ(r.chunks, 2);
    EXPECT_EQ(r.scored_per_chunk, 3);  // positions 3, 4, 5 predict tokens 4, 5, 6
    EXPECT_EQ(r.stats.count, 6);
    EXPECT_NEAR(r.stats.ppl() / want.ppl, 1.0, 2e-4);
    EXPECT_NEAR(r.stats.ppl_error() / want.err, 1.0, 2e-3);
    ASSERT_EQ(r.running.size(), 2u);
    EXPECT_NEAR(r.running[0] / want.first_chunk_ppl, 1.0, 2e-4);
  }
  // Without BOS the second chunk starts with token 5: other logits, another figure.
  nlp::PerplexityOptions o;
  o.context = ctx;
  o.kv_dtype = DType::kFloat32;
  const auto no_bos = nlp::perplexity(*m.lm, tokens, std::nullopt, o);
  EXPECT_GT(std::fabs(no_bos.stats.ppl() / want.ppl - 1.0), 1e-3);
}

TEST(Perplexity, StatsFollowLlamaCppFormula) {
  // Two tokens over a 3-word vocabulary: NLL = logsumexp(row) - row[target].
  const float logits[] = {0.f, 1.f, 2.f, 3.f, 1.f, -1.f};
  const int32_t targets[] = {2, 1};
  nlp::PerplexityStats s;
  s.add(logits, 2, 3, targets);
  const double l1 = std::log(std::exp(0.0) + std::exp(1.0) + std::exp(2.0)) - 2.0;
  const double l2 = std::log(std::exp(3.0) + std::exp(1.0) + std::exp(-1.0)) - 1.0;
  EXPECT_EQ(s.count, 2);
  EXPECT_NEAR(s.ppl(), std::exp((l1 + l2) / 2), 1e-6);
  // mean(x^2) - mean(x)^2 over n = 2, divided by n - 1, square root, times PPL
  const double var = (l1 * l1 + l2 * l2) / 2 - std::pow((l1 + l2) / 2, 2);
  EXPECT_NEAR(s.ppl_error(), std::sqrt(var / 1) * s.ppl(), 1e-6);
  nlp::PerplexityStats empty;
  EXPECT_TRUE(std::isnan(empty.ppl()));
  EXPECT_EQ(empty.ppl_error(), 0.0);
}

TEST(Perplexity, BadArgumentsAreValueErrors) {
  const Reference ref = load_reference("llama");
  auto m = tiny_llama();
  const auto tokens = two_chunks(ref);  // 14 tokens
  auto code_of = [&](int64_t ctx, int64_t batch, size_t n_tokens) {
    nlp::PerplexityOptions o;
    o.context = ctx;
    o.batch = batch;
    try {
      nlp::perplexity(*m.lm, std::span<const int32_t>(tokens).first(n_tokens), 1, o);
    } catch (const Error& e) {
      return e.code();
    }
    return ErrorCode::kInternal;
  };
  EXPECT_EQ(code_of(7, 0, 13), ErrorCode::kValue);   // fewer than 2 x ctx tokens
  EXPECT_EQ(code_of(3, 0, 14), ErrorCode::kValue);   // ctx below 4
  EXPECT_EQ(code_of(65, 0, 14), ErrorCode::kValue);  // past the model's 64 positions
  EXPECT_EQ(code_of(7, 10, 14), ErrorCode::kValue);  // batch above ctx, not a multiple
}

}  // namespace
