// rope and attention against PyTorch references (tests/fixtures/llm/llm_ops.json, written by
// tools/make_llm_op_fixtures.py): Hugging Face's rotate_half RoPE in float32, Meta's complex-pair
// (interleaved) RoPE and grouped-query causal attention over a cache with a past offset.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "spore/llm.h"
#include "test_util.h"

namespace spore::test {
namespace {

const nlohmann::json& fixture() {
  static const nlohmann::json j = [] {
    std::ifstream in(std::filesystem::path(SPORE_SOURCE_DIR) / "tests/fixtures/llm/llm_ops.json");
    return nlohmann::json::parse(in);
  }();
  return j;
}

Shape shape_of(const nlohmann::json& a) { return Shape(a.get<std::vector<int64_t>>()); }

TEST(LlmTorchFixture, RopeHalfSplitMatchesHuggingFace) {
  const auto& f = fixture()["rope_half"];
  const Tensor x = make_tensor(f["x"].get<std::vector<double>>(), shape_of(f["shape"]), DType::kFloat32);
  const Tensor y = rope(x, Tensor::from_vector(f["positions"].get<std::vector<int64_t>>()),
                        Tensor::from_vector(f["inv_freq"].get<std::vector<float>>()));
  // HF takes cos and sin in float32 (torch's float cos at angle 1000 differs from the correctly
  // rounded one by an ulp or so of the angle's scale); the op rounds them once from double.
  expect_close(y, f["y"].get<std::vector<double>>(), Tol{2e-6, 2e-6});
}

TEST(LlmTorchFixture, RopeInterleavedMatchesComplexPairs) {
  const auto& f = fixture()["rope_interleaved"];
  RopeOptions o;
  o.seq_axis = -3;  // [B, S, H, D]
  o.interleaved = true;
  const Tensor x = make_tensor(f["x"].get<std::vector<double>>(), shape_of(f["shape"]), DType::kFloat64);
  const Tensor y = rope(x, Tensor::from_vector(f["positions"].get<std::vector<int64_t>>()),
                        Tensor::from_vector(f["inv_freq"].get<std::vector<float>>()), o);
  expect_close(y, f["y"].get<std::vector<double>>(), Tol{1e-12, 1e-12});
}

TEST(LlmTorchFixture, GroupedQueryAttentionMatchesTorch) {
  const auto& f = fixture()["attention"];
  const int64_t B = f["B"], Hq = f["Hq"], Hkv = f["Hkv"], S = f["S"], T = f["T"], D = f["D"], past = f["past"];
  for (DType t : {DType::kFloat64, DType::kFloat32}) {
    SCOPED_TRACE(dtype_name(t));
    const Tensor q = make_tensor(f["q"].get<std::vector<double>>(), Shape{B, Hq, S, D}, DType::kFloat64);
    const Tensor k = make_tensor(f["k"].get<std::vector<double>>(), Shape{B, Hkv, T, D}, DType::kFloat64);
    const Tensor v = make_tensor(f["v"].get<std::vector<double>>(), Shape{B, Hkv, T, D}, DType::kFloat64);
    const Tensor y = attention(cast(q, t), cast(k, t), cast(v, t), 0, past);
    expect_close(y, f["y"].get<std::vector<double>>(), t == DType::kFloat64 ? Tol{1e-12, 1e-12} : Tol{2e-6, 2e-6});
  }
}

}  // namespace
}  // namespace spore::test
