// NOTE [Exact speculation]: a speculative step's verification chunk [last, d1..dK] must give every
// row the bits a one-token decode step at that position gives, under the ggml numerics too, so
// that greedy output with speculation is exactly greedy output without it. Checked from the
// bottom up: the products (every quantized type, both layouts, every SIMD level: a row computed
// among 9 equals it computed alone), the attention's rows_as_decode rows (equal to one-query
// calls), a model's chunk rows (equal to one-token forwards, on llama.cpp-quantised GGUF files of
// every type, a Q8_0 file and the embedded SmolLM2's Q4_1), and the engine's greedy
// tokens and their logprobs with and without prompt lookup.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "nlp/embedded_model.h"
#include "ops/llm_test_util.h"
#include "spore/half.h"
#include "spore/llm.h"
#include "spore/nlp/generate.h"
#include "spore/nlp/model.h"
#include "spore/ops.h"
#include "spore/quant.h"

namespace spore::test {
namespace {

std::vector<float> uniform(size_t n, uint32_t seed, float lo = -1, float hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

// Bit equality of two float vectors, naming the first differing index.
::testing::AssertionResult same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << "sizes " << a.size() << " and " << b.size();
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0)
      return ::testing::AssertionFailure() << "index " << i << ": " << a[i] << " vs " << b[i];
  return ::testing::AssertionSuccess();
}

// ---- the products ----------------------------------------------------------------------------
// Every row of a 9-row product (two 4-row tiles and a single row) and of a 2- and a 3-row one
// (padded to a 4-row tile) equals that row's product alone (decode's 1 x 1 path), bit for bit,
// for every type Spore quantises to and the repacked layout, under both numerics. (Not float16 /
// bfloat16 weights: NOTE [Exact speculation] says why not yet.)
TEST(ExactSpeculation, ProductRowsDoNotDependOnTheRowsBesideThem) {
  const int64_t m = 9, k = 256, n = 24;  // k: whole k-quant super-blocks; n: whole 8-row groups, 2- 3- and 4-row tiles
  const std::vector<float> xv = uniform((size_t)(m * k), 7, -2, 2);
  const Tensor x = Tensor::from_vector(xv, Shape{m, k});
  const std::vector<float> wv = uniform((size_t)(n * k), 11);
  struct Case {
    GgmlType type;
    Tensor w;
    QuantLayout layout;
  };
  std::vector<Case> cases;
  for (const QuantTraits& t : all_quant_types()) {
    if (!t.quantize || t.activations == QuantActivations::kNone || t.activations == QuantActivations::kFloat) continue;  // 16-bit ones below
    const size_t rb = quant_row_bytes(t.type, k);
    std::vector<uint8_t> bytes(rb * (size_t)n);
    for (int64_t r = 0; r < n; ++r)
      quantize_row(t.type, std::span<const float>(wv.data() + r * k, (size_t)k), std::span<uint8_t>(bytes.data() + r * rb, rb));
    const Tensor w = Tensor::from_vector(bytes, Shape{n, (int64_t)rb});
    cases.push_back({t.type, w, QuantLayout::kRows});
    if (t.type == GgmlType::kQ4_0 || t.type == GgmlType::kQ5_0 || t.type == GgmlType::kQ8_0)
      cases.push_back({t.type, repack_quant_rows(w, t.type), QuantLayout::kRows8});
  }
  ASSERT_GE(cases.size(), 9u);  // q4_0 q4_1 q5_0 q8_0 q4_k q6_k, 3 repacked; the read-only types: the quant files below
  at_every_level([&] {
    for (const Case& c : cases)
      for (bool ggml : {true, false}) {
        SCOPED_TRACE(std::string(quant_traits(c.type).key) + (c.layout == QuantLayout::kRows8 ? " repacked" : "") +
                     (ggml ? " ggml" : " reference"));
        for (int64_t rows : {m, int64_t{2}, int64_t{3}}) {
          const std::vector<float> all = matmul_q(slice(x, 0, 0, rows), c.w, c.type, ggml, c.layout).to_vector<float>();
          for (int64_t r = 0; r < rows; ++r) {
            const Tensor one = Tensor::from_vector(std::vector<float>(xv.begin() + r * k, xv.begin() + (r + 1) * k), Shape{1, k});
            const std::vector<float> alone = matmul_q(one, c.w, c.type, ggml, c.layout).to_vector<float>();
            EXPECT_TRUE(same_bits(std::vector<float>(all.begin() + r * n, all.begin() + (r + 1) * n), alone))
                << "row " << r << " of " << rows;
          }
        }
      }
  });
}

// ---- attention -------------------------------------------------------------------------------
// rows_as_decode: each query row of a chunk equals a one-query call at its position (ggml's
// vector dot order), where the default keeps llama.cpp's multi-token (tiled) order for prefill.
TEST(ExactSpeculation, AttentionRowsAsDecodeEqualOneQueryCalls) {
  const int64_t Hq = 6, Hkv = 2, S = 9, D = 64, T = 200, past = 150;
  const Tensor q = Tensor::from_vector(uniform((size_t)(Hq * S * D), 3, -1.5, 1.5), Shape{1, Hq, S, D});
  for (DType cache : {DType::kFloat16, DType::kFloat32}) {
    const Tensor k = cast(Tensor::from_vector(uniform((size_t)(Hkv * T * D), 4, -1.5, 1.5), Shape{1, Hkv, T, D}), cache);
    const Tensor v = cast(Tensor::from_vector(uniform((size_t)(Hkv * T * D), 5), Shape{1, Hkv, T, D}), cache);
    at_every_level([&] {
      SCOPED_TRACE(dtype_name(cache));
      const std::vector<float> rows = attention(q, k, v, 0, past, true, 0, 0, true).to_vector<float>();
      const std::vector<float> tiled = attention(q, k, v, 0, past, true).to_vector<float>();
      bool differs = false;
      for (int64_t s = 0; s < S; ++s) {
        const Tensor qs = slice(q, 2, s, s + 1).contiguous();
        const std::vector<float> one = attention(qs, k, v, 0, past + s, true).to_vector<float>();
        std::vector<float> got, prefill;
        for (int64_t h = 0; h < Hq; ++h) {
          got.insert(got.end(), rows.begin() + (h * S + s) * D, rows.begin() + (h * S + s + 1) * D);
          prefill.insert(prefill.end(), tiled.begin() + (h * S + s) * D, tiled.begin() + (h * S + s + 1) * D);
        }
        EXPECT_TRUE(same_bits(got, one)) << "query row " << s;
        differs = differs || !same_bits(prefill, one);
      }
      // Why the flag exists: the multi-token order really is another one (so the check above
      // would fail without it).
      EXPECT_TRUE(differs);
    });
  }
}

// ---- a model's chunk rows --------------------------------------------------------------------
std::filesystem::path source(const std::string& rel) { return std::filesystem::path(SPORE_SOURCE_DIR) / rel; }

// The verification chunk's rows against one-token forwards: slot 0 decodes `steps` one token a
// forward, slot 1 gets them as one chunk with all_logits and rows_as_decode; both after the same
// prefill. Every row, and the next step after the chunk (so the cache rows it wrote), bit for bit.
void expect_chunk_rows_equal_steps(nlp::CausalLM& lm, const std::vector<int32_t>& prompt, const std::vector<int32_t>& steps) {
  const int64_t vocab = lm.config().vocab_size;
  auto cache = lm.make_cache(2, (int64_t)(prompt.size() + steps.size() + 1), DType::kFloat16);
  for (int32_t slot : {0, 1}) {
    nlp::SequenceChunk c{slot, 0, prompt};
    lm.forward({&c, 1}, *cache);
  }
  std::vector<float> one_by_one;
  const int64_t at = (int64_t)prompt.size();
  for (size_t i = 0; i < steps.size(); ++i) {
    nlp::SequenceChunk c{0, at + (int64_t)i, std::span<const int32_t>(&steps[i], 1)};
    const auto row = lm.forward({&c, 1}, *cache).to_vector<float>();
    one_by_one.insert(one_by_one.end(), row.begin(), row.end());
  }
  nlp::SequenceChunk chunk{1, at, steps, /*all_logits=*/true};
  chunk.rows_as_decode = true;
  const std::vector<float> chunked = lm.forward({&chunk, 1}, *cache).to_vector<float>();
  ASSERT_EQ(chunked.size(), steps.size() * (size_t)vocab);
  for (size_t i = 0; i < steps.size(); ++i)
    EXPECT_TRUE(same_bits(std::vector<float>(chunked.begin() + (int64_t)i * vocab, chunked.begin() + (int64_t)(i + 1) * vocab),
                          std::vector<float>(one_by_one.begin() + (int64_t)i * vocab, one_by_one.begin() + (int64_t)(i + 1) * vocab)))
        << "chunk row " << i;
  const int32_t next = 3;
  std::vector<std::vector<float>> after;
  for (int32_t slot : {0, 1}) {
    nlp::SequenceChunk c{slot, at + (int64_t)steps.size(), std::span<const int32_t>(&next, 1)};
    after.push_back(lm.forward({&c, 1}, *cache).to_vector<float>());
  }
  EXPECT_TRUE(same_bits(after[1], after[0])) << "the step after the chunk";
}

void check_file(const std::filesystem::path& file, const std::vector<int32_t>& prompt, const std::vector<int32_t>& steps) {
  SCOPED_TRACE(file.filename().string());
  nlp::LoadOptions o;
  o.numerics = nlp::LoadOptions::Numerics::kGgml;
  o.allow_unverified = true;
  const nlp::LoadedModel m = nlp::load_model(file, o);
  at_every_level([&] { expect_chunk_rows_equal_steps(*m.lm, prompt, steps); });
}

const std::vector<int32_t> kPrompt = {1, 5, 17, 9, 30, 2, 8, 14, 21, 6, 11, 4};
const std::vector<int32_t> kSteps = {7, 19, 3, 25, 12, 10, 16, 22, 13};  // last + 8 drafted

// llama-quantize's files of every type Spore reads (tests/fixtures/quant; 32-wide heads, so the
// attention's multi-token order is the tiled one): q4_0 (repacked at load), q5_0, q5_1, q8_0,
// the k-quants, iq4 and the ternary types.
TEST(ExactSpeculation, ChunkRowsEqualOneTokenStepsOnEveryQuantType) {
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(source("tests/fixtures/quant")))
    if (e.path().filename().string().rfind("llama-", 0) == 0 && e.path().extension() == ".gguf") {
      check_file(e.path(), kPrompt, kSteps);
      ++files;
    }
  EXPECT_GE(files, 11);
}

// A Q8_0 file (spore convert's); Q4_1 is the embedded SmolLM2's type (below) and the products'
// test's.
TEST(ExactSpeculation, ChunkRowsEqualOneTokenStepsOnAQ8File) {
  check_file(source("tests/fixtures/llm/llama/model-q8_0.gguf"), kPrompt, kSteps);
}

// bench/speculative_bench.py's prompt (an edit that copies a given text).
const std::string kCopyPrompt =
    "Rewrite the following paragraph exactly as it is, but replace the word 'slot' with 'lane' everywhere.\n\n"
    "Paragraph: The engine keeps one KV cache for every slot and runs each step as one batched forward pass. "
    "Queued requests take free slots in arrival order, and a slot whose last sequence shares a prefix with a new "
    "prompt is reused without recomputing those rows. Stop strings, grammars and sampling options apply per "
    "request, and a cancelled request frees its slot at once.\n\nRewritten paragraph:";

const nlp::LoadedModel& smollm2() {
  static const nlp::LoadedModel m = nlp::load_model(kModel, {.require_tokenizer = true});
  return m;
}

TEST(ExactSpeculation, ChunkRowsEqualOneTokenStepsOnSmolLM2) {
  if (!have_model()) GTEST_SKIP() << kModel << " is not there (bash scripts/fetch-model.sh)";
  const auto& m = smollm2();
  const std::vector<int32_t> ids = m.tokenizer->encode(kCopyPrompt, true);  // a short prefill: the generic level is slow
  const std::vector<int32_t> prompt(ids.begin(), ids.begin() + 20), steps(ids.begin() + 20, ids.begin() + 29);
  at_every_level([&] { expect_chunk_rows_equal_steps(*m.lm, prompt, steps); });
}

// ---- the engine ------------------------------------------------------------------------------
struct Run {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  int64_t drafted = 0, accepted = 0;
};

Run greedy_run(const nlp::LoadedModel& m, const std::vector<int32_t>& prompt, int64_t n, bool ngram) {
  nlp::GenerateOptions o;
  o.max_tokens = n;
  o.sampling.temperature = 0;
  o.sampling.logprobs = true;
  o.ignore_eos = true;
  o.apply_model_defaults = false;
  if (ngram) {
    o.speculative.type = nlp::SpeculativeOptions::Type::kNgram;
    o.speculative.draft_max = 8;
  }
  nlp::EngineOptions eo;
  eo.context = (int64_t)prompt.size() + n;
  nlp::Engine e(m, eo);
  const uint64_t id = e.add(prompt, o);
  Run r;
  while (!e.idle())
    for (const nlp::SequenceEvent& ev : e.step())
      if (ev.token) r.tokens.push_back(*ev.token), r.logprobs.push_back(ev.logprob);
  r.drafted = e.timings(id).drafted_tokens;
  r.accepted = e.timings(id).accepted_tokens;
  return r;
}

// Greedy tokens with prompt lookup equal those without, and so do their logprobs, bit for bit
// (the logits of a verified row are the one-token step's), with drafts both kept and rejected.
void expect_speculation_exact(const nlp::LoadedModel& m, const std::vector<int32_t>& prompt, int64_t n) {
  const Run plain = greedy_run(m, prompt, n, false), spec = greedy_run(m, prompt, n, true);
  EXPECT_EQ(spec.tokens, plain.tokens);
  EXPECT_TRUE(same_bits(spec.logprobs, plain.logprobs));
  EXPECT_GT(spec.accepted, 0);
  EXPECT_LT(spec.accepted, spec.drafted);
}

TEST(ExactSpeculation, GreedyNgramEqualsPlainOnATinyGgmlModel) {
  nlp::LoadOptions o;
  o.numerics = nlp::LoadOptions::Numerics::kGgml;
  const nlp::LoadedModel m = nlp::load_model(source("tests/fixtures/quant/llama-q4_k_m.gguf"), o);
  std::vector<int32_t> prompt;  // a repeated phrase, so that prompt lookup finds drafts
  for (int rep = 0; rep < 3; ++rep)
    for (int32_t t : {11, 42, 7, 93, 5, 61, 28}) prompt.push_back(t);
  at_every_level([&] { expect_speculation_exact(m, prompt, 40); });
}

TEST(ExactSpeculation, GreedyNgramEqualsPlainOnSmolLM2) {
  if (!have_model()) GTEST_SKIP() << kModel << " is not there (bash scripts/fetch-model.sh)";
  const auto& m = smollm2();
  const nlohmann::json messages = nlohmann::json::array({{{"role", "user"}, {"content", kCopyPrompt}}});
  const std::vector<int32_t> prompt = m.tokenizer->encode(m.chat_template->render(messages.dump(), true), false);
  expect_speculation_exact(m, prompt, 32);  // without NOTE [Exact speculation], token 18 differed
}

}  // namespace
}  // namespace spore::test
