// GGUF files written by llama.cpp's own llama-quantize in every type Spore reads
// (tests/fixtures/quant/llama-<ftype>.gguf, tools/make_quant_fixtures.py; NOTE [Quantization
// types]): a tiny llama whose 160-wide rows make llama.cpp fall back per tensor (Q4_K -> Q5_0,
// Q5_K -> Q5_1, Q6_K -> Q8_0, Q2_K / Q3_K / TQ -> Q4_0, IQ4_XS -> IQ4_NL) as it does for
// Qwen2.5-0.5B and SmolLM2. Each file (i) loads, (ii) dequantises to exactly the floats of the
// `gguf` package's numpy dequantisers (SHA-256 of every tensor's float32 values), (iii) gives the
// logits of a float64 forward pass on those weights, and (iv) its greedy tokens.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "model_test_util.h"
#include "repack_test_util.h"
#include "spore/format.h"
#include "spore/gguf.h"
#include "spore/llm.h"
#include "spore/nlp/convert.h"
#include "spore/quant.h"

namespace spore::test::llm {
namespace {

std::filesystem::path quant_dir() { return std::filesystem::path(SPORE_SOURCE_DIR) / "tests" / "fixtures" / "quant"; }

const nlohmann::json& reference() {
  static const nlohmann::json j = [] {
    std::ifstream in(quant_dir() / "llama_reference.json");
    std::stringstream ss;
    ss << in.rdbuf();
    return nlohmann::json::parse(ss.str());
  }();
  return j;
}

std::vector<std::string> ftypes() {
  std::vector<std::string> out;
  for (const auto& [k, v] : reference().items()) out.push_back(k);
  return out;
}

class QuantFileTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::filesystem::path file() const { return quant_dir() / ("llama-" + GetParam() + ".gguf"); }
  const nlohmann::json& ref() const { return reference().at(GetParam()); }
};

TEST_P(QuantFileTest, DequantisesAsTheGgufPackage) {
  const GgufFile g(file());
  const auto& tensors = ref().at("tensors");
  ASSERT_EQ(g.tensors().size(), tensors.size());
  std::set<std::string> types;
  for (const GgufTensorInfo& t : g.tensors()) {
    SCOPED_TRACE(t.name);
    const auto& want = tensors.at(t.name);
    const QuantTraits& q = quant_traits(t.type);
    EXPECT_EQ(q.name, want.at("type").get<std::string>());
    types.insert(q.name);
    const int64_t k = (int64_t)t.dims[0], rows = (int64_t)(t.numel() / t.dims[0]);
    const size_t rb = quant_row_bytes(t.type, k);
    std::vector<float> all((size_t)(rows * k));
    for (int64_t r = 0; r < rows; ++r)
      dequantize_row(t.type, g.tensor_bytes(t.name).subspan((size_t)r * rb, rb), {all.data() + r * k, (size_t)k});
    EXPECT_EQ(sha256_bytes({(const uint8_t*)all.data(), all.size() * 4}), want.at("sha256").get<std::string>());
  }
  EXPECT_GE(types.size(), 2u);  // the requested type and at least F32 norms
}

// matmul_q on llama.cpp's own blocks: every matrix of a type with a product, times random
// activations, against the dequantised weights in float64 with the activations rounded to q8
// blocks as the kernel rounds them (only float32 accumulation separates the two).
TEST_P(QuantFileTest, ProductsOnTheFilesBlocksMatchFloat64) {
  const GgufFile g(file());
  for (const GgufTensorInfo& t : g.tensors()) {
    const QuantTraits& q = quant_traits(t.type);
    if (t.dims.size() != 2 || q.activations != QuantActivations::kQ8Groups) continue;
    SCOPED_TRACE(t.name + " (" + q.name + ")");
    const int64_t k = (int64_t)t.dims[0], n = (int64_t)t.dims[1], m = 3;
    const size_t rb = quant_row_bytes(t.type, k);
    std::vector<float> w((size_t)(n * k));
    for (int64_t r = 0; r < n; ++r)
      dequantize_row(t.type, g.tensor_bytes(t.name).subspan((size_t)r * rb, rb), {w.data() + r * k, (size_t)k});
    std::vector<float> x((size_t)(m * k));
    for (size_t i = 0; i < x.size(); ++i) x[i] = (float)std::sin(0.37 * (double)i + 0.1) * 1.5f;
    const Tensor wt = reshape(g.tensor(t.name), {n, (int64_t)rb});
    const auto y = matmul_q(Tensor::from_vector(x, Shape{m, k}), wt, t.type).to_vector<float>();
    for (int64_t r = 0; r < m; ++r) {
      std::vector<double> xq((size_t)k);
      for (int64_t b = 0; b < k / 32; ++b) {
        float amax = 0;
        for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[(size_t)(r * k + b * 32 + j)]));
        const float d = amax / 127.f, id = amax > 0 ? 127.f / amax : 0.f;
        for (int j = 0; j < 32; ++j)
          xq[(size_t)(b * 32 + j)] = (double)d * std::nearbyint(x[(size_t)(r * k + b * 32 + j)] * id);
      }
      for (int64_t i = 0; i < n; ++i) {
        double want = 0, mag = 0;
        for (int64_t e = 0; e < k; ++e) {
          want += xq[(size_t)e] * w[(size_t)(i * k + e)];
          mag += std::fabs(xq[(size_t)e] * w[(size_t)(i * k + e)]);
        }
        ASSERT_NEAR(y[(size_t)(r * n + i)], want, 1e-5 * mag + 1e-6) << "row " << r << " col " << i;
      }
    }
  }
}

// Per position: max |Spore - reference| over the vocabulary; and max |reference|.
std::pair<std::vector<double>, double> logits_error(const nlp::LoadedModel& m, const nlohmann::json& ref) {
  const std::vector<int32_t> prompt = ref.at("prompt").get<std::vector<int32_t>>();
  auto cache = m.lm->make_cache(1, (int64_t)prompt.size(), DType::kFloat32);
  nlp::SequenceChunk c{0, 0, prompt, /*all_logits=*/true};
  const auto got = m.lm->forward({&c, 1}, *cache).to_vector<float>();
  const auto want = ref.at("logits").get<std::vector<std::vector<double>>>();
  EXPECT_EQ(got.size(), want.size() * want[0].size());
  std::vector<double> diff(want.size());
  double scale = 0;
  for (size_t i = 0; i < want.size(); ++i)
    for (size_t j = 0; j < want[i].size() && i * want[i].size() + j < got.size(); ++j) {
      scale = std::max(scale, std::fabs(want[i][j]));
      diff[i] = std::max(diff[i], std::fabs(got[i * want[i].size() + j] - want[i][j]));
    }
  return {diff, scale};
}

// The default numerics of a GGUF file (ggml's roundings, NOTE [LLM numerics]) stay close too: the
// products of every type run, with float16 activation scales where ggml has them.
TEST_P(QuantFileTest, GgmlNumericsStayClose) {
  const auto m = nlp::load_model(file());
  const auto [diff, scale] = logits_error(m, ref());
  for (size_t i = 0; i < diff.size(); ++i) EXPECT_LT(diff[i], 3e-2 * scale) << "position " << i;
}

// The reference rounds each product's input to q8 blocks as matmul_q does, so what remains is
// float32 accumulation (1e-3 of the largest logit covers it) and, rarely, an input that float32
// puts on the other side of a rounding half step than float64 does: one q8 level (amax / 127) of
// one value, which moved the Q5_1 file's last two positions by 0.8% of the largest logit. So:
// every position within 2.5%, and most (all but a quarter) within 1e-3.
TEST_P(QuantFileTest, LogitsMatchFloat64Reference) {
  nlp::LoadOptions o;
  o.numerics = nlp::LoadOptions::Numerics::kReference;
  const auto m = nlp::load_model(file(), o);
  const auto [diff, scale] = logits_error(m, ref());
  size_t tight = 0;
  for (size_t i = 0; i < diff.size(); ++i) {
    EXPECT_LT(diff[i], 2.5e-2 * scale) << "position " << i << ", largest logit " << scale;
    tight += diff[i] < 1e-3 * scale;
  }
  EXPECT_GE(tight * 4, diff.size() * 3) << "most positions should agree to float32 accumulation";
}

// Greedy tokens equal the reference's while its top-2 margin exceeds what a q8 level flip moved a
// logit by (0.05; see above): a closer call is not the kernel's to get right.
TEST_P(QuantFileTest, GreedyTokensMatchFloat64Reference) {
  nlp::LoadOptions o;
  o.numerics = nlp::LoadOptions::Numerics::kReference;
  const auto m = nlp::load_model(file(), o);
  const std::vector<int32_t> prompt = ref().at("prompt").get<std::vector<int32_t>>();
  const auto want = ref().at("greedy").get<std::vector<int32_t>>();
  const auto margins = ref().at("greedy_margins").get<std::vector<double>>();
  size_t n = 0;
  while (n < want.size() && margins[n] > 0.05) ++n;
  ASSERT_GE(n, 1u);
  EXPECT_EQ(greedy(*m.lm, prompt, (int)n, DType::kFloat32), std::vector<int32_t>(want.begin(), want.begin() + (long)n));
}

// NOTE [Repacked weights]: the q4_0 / q5_0 / q8_0 matrices (here also a tied-style Q5_0
// embedding table, read back row by row) are repacked at load unless set_repack_at_load(false):
// the repacked copy moves its bytes from mapped to resident, and the logits stay those of the
// file's own layout to float32 accumulation.
TEST_P(QuantFileTest, RepackedAtLoadLikeTheMapping) {
  nlp::LoadOptions o;  // reference numerics repack q5_0 too (ggml's: q4_0 only; nlp::repacked_at_load)
  o.numerics = nlp::LoadOptions::Numerics::kReference;
  set_repack_at_load(false);
  const auto mapped = nlp::load_model(file(), o);
  set_repack_at_load(true);
  const auto packed = nlp::load_model(file(), o);
  // A GGUF's default (ggml) numerics repack q4_0 and iq4_nl alone: llama.cpp multiplies q5_0 / q8_0
  // row-major.
  const GgufFile gguf(file());  // named: tensors() refers into the file object
  for (const auto& t : gguf.tensors()) {
    if (t.type == GgmlType::kQ5_0 || t.type == GgmlType::kQ8_0) {
      EXPECT_FALSE(nlp::repacked_at_load(t.type, 8, true));
    }
  }
  EXPECT_EQ(nlp::load_model(file()).lm->weight_memory().weights_resident, repacked_bytes(file(), true));
  const nlp::MemoryReport a = mapped.lm->weight_memory(), b = packed.lm->weight_memory();
  EXPECT_EQ(a.weights_mapped + a.weights_resident, b.weights_mapped + b.weights_resident);
  EXPECT_EQ(a.weights_resident, 0u);
  EXPECT_EQ(b.weights_resident, repacked_bytes(file()));
  const std::vector<int32_t> prompt = ref().at("prompt").get<std::vector<int32_t>>();
  auto logits = [&](const nlp::LoadedModel& m) {
    auto cache = m.lm->make_cache(1, (int64_t)prompt.size(), DType::kFloat32);
    nlp::SequenceChunk c{0, 0, prompt, /*all_logits=*/true};
    return m.lm->forward({&c, 1}, *cache).to_vector<float>();
  };
  const std::vector<float> la = logits(mapped), lb = logits(packed);
  ASSERT_EQ(la.size(), lb.size());
  double scale = 0, diff = 0;
  for (size_t i = 0; i < la.size(); ++i) {
    scale = std::max(scale, (double)std::fabs(la[i]));
    diff = std::max(diff, (double)std::fabs(la[i] - lb[i]));
  }
  EXPECT_LT(diff, 1e-4 * scale);
}

INSTANTIATE_TEST_SUITE_P(LlamaQuantize, QuantFileTest, ::testing::ValuesIn(ftypes()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace spore::test::llm
