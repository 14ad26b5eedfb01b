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
#include "spore/format.h"
#include "spore/gguf.h"
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

TEST_P(QuantFileTest, LogitsMatchFloat64Reference) {
  nlp::LoadOptions o;
  o.numerics = nlp::LoadOptions::Numerics::kReference;
  const auto m = nlp::load_model(file(), o);
  const std::vector<int32_t> prompt = ref().at("prompt").get<std::vector<int32_t>>();
  auto cache = m.lm->make_cache(1, (int64_t)prompt.size(), DType::kFloat32);
  nlp::SequenceChunk c{0, 0, prompt, /*all_logits=*/true};
  const auto got = m.lm->forward({&c, 1}, *cache).to_vector<float>();
  const auto want = ref().at("logits").get<std::vector<std::vector<double>>>();
  ASSERT_EQ(got.size(), want.size() * want[0].size());
  double scale = 0, diff = 0;
  for (size_t i = 0; i < want.size(); ++i)
    for (size_t j = 0; j < want[i].size(); ++j) {
      scale = std::max(scale, std::fabs(want[i][j]));
      diff = std::max(diff, std::fabs(got[i * want[i].size() + j] - want[i][j]));
    }
  // The reference rounds each product's input to q8 blocks as matmul_q does, so what remains is
  // float32 accumulation and the rare q8 rounding that a float32 input puts on the other side of a
  // half step (one step of amax / 127 in one of 32 values): 2e-3 of the largest logit.
  EXPECT_LT(diff, 2e-3 * scale) << "largest logit " << scale;
}

TEST_P(QuantFileTest, GreedyTokensMatchFloat64Reference) {
  nlp::LoadOptions o;
  o.numerics = nlp::LoadOptions::Numerics::kReference;
  const auto m = nlp::load_model(file(), o);
  const std::vector<int32_t> prompt = ref().at("prompt").get<std::vector<int32_t>>();
  const auto want = ref().at("greedy").get<std::vector<int32_t>>();
  EXPECT_EQ(greedy(*m.lm, prompt, (int)want.size(), DType::kFloat32), want);
}

INSTANTIATE_TEST_SUITE_P(LlamaQuantize, QuantFileTest, ::testing::ValuesIn(ftypes()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace spore::test::llm
