// Real Hugging Face checkpoints are bfloat16 (sometimes float16): their matrices go through
// matmul_q ("bf16"/"f16") in place, the embedding through the row dequantizer, the norms are
// widened once. Reference: the float32 path (checked against transformers by the fixture tests)
// on the same weights rounded to that dtype and back.
#include <gtest/gtest.h>

#include "model_test_util.h"

namespace spore::test::llm {
namespace {

namespace fs = std::filesystem;

void rewrite_weights(const fs::path& dir, DType stored, bool round_trip) {
  auto st = load_safetensors(dir / "model.safetensors");
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& [name, t] : st.tensors) {
    const Tensor r = cast(t, stored);
    out.emplace_back(name, round_trip ? cast(r, DType::kFloat32) : r);
  }
  save_safetensors(dir / "model.safetensors", out);
}

class HalfPrecisionTest : public ::testing::TestWithParam<std::tuple<std::string, DType>> {};

TEST_P(HalfPrecisionTest, MatchesFloat32PathOnRoundedWeights) {
  const auto& [family, dtype] = GetParam();
  const auto half = scratch_copy(family, std::string("half_") + dtype_name(dtype));
  const auto ref = scratch_copy(family, std::string("ref_") + dtype_name(dtype));
  rewrite_weights(half, dtype, false);
  rewrite_weights(ref, dtype, true);
  const auto a = nlp::load_model(half), b = nlp::load_model(ref);
  const auto mem = a.lm->weight_memory();
  EXPECT_GT(mem.weights_mapped, mem.weights_resident);  // matrices in place, only 1-D widened
  const Reference r = load_reference(family);
  for (const auto& p : r.prompts) {
    auto ca = a.lm->make_cache(1, (int64_t)p.size(), DType::kFloat32);
    auto cb = b.lm->make_cache(1, (int64_t)p.size(), DType::kFloat32);
    nlp::SequenceChunk c{0, 0, p, true};
    EXPECT_LT(logits_diff(a.lm->forward({&c, 1}, *ca), b.lm->forward({&c, 1}, *cb)), 1e-4) << family;
  }
  fs::remove_all(half);
  fs::remove_all(ref);
}

INSTANTIATE_TEST_SUITE_P(Families, HalfPrecisionTest,
                         ::testing::Combine(::testing::Values("llama", "qwen3", "minicpm3"),
                                            ::testing::Values(DType::kBFloat16, DType::kFloat16)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + dtype_name(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace spore::test::llm
