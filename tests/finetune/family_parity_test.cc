// The training forward on every dense family against PyTorch + PEFT (NOTE [LoRA training]): for
// each family's tiny random fixture (tests/fixtures/llm/<family>/hf), with adapters on all seven
// projections set by the formula tools/make_finetune_fixtures.py also uses (formula_init), the
// loss and every adapter gradient on two sequences equal PEFT's within 1e-4
// (tests/fixtures/finetune/peft_step0_<family>.safetensors). The families' differences are what is
// checked: qwen2's biases, qwen3's q/k norms, mistral's sliding window (4, shorter than the
// sequences), gemma's embedding scale and 1 + w norms, gemma2's sandwich norms and soft-caps,
// gemma3's per-layer rope base, granite's multipliers, olmo2's post-norms and full q/k norms.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "spore/autograd.h"
#include "spore/format.h"
#include "spore/nlp/finetune.h"
#include "spore/nlp/model.h"
#include "spore/ops.h"

namespace spore::test {
namespace {

namespace fs = std::filesystem;
const fs::path kSource = SPORE_SOURCE_DIR;

// formula_init of the tools script.
Tensor formula_init(const nlp::TrainableLora& a, bool is_a) {
  const Tensor& like = is_a ? a.a.value() : a.b.value();
  const int64_t n = like.numel();
  const auto k = static_cast<double>(std::find(nlp::kLoraTargetNames.begin(), nlp::kLoraTargetNames.end(), a.target) -
                                     nlp::kLoraTargetNames.begin());
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = static_cast<float>(is_a ? 0.3 * std::sin(0.37 * i + 1.1 * a.layer + k)
                                                        : 0.1 * std::cos(0.53 * i + 0.7 * a.layer + k));
  return Tensor::from_vector(v, like.shape());
}

class FamilyParity : public ::testing::TestWithParam<std::string> {};

TEST_P(FamilyParity, LossAndAdapterGradientsEqualPeft) {
  const std::string family = GetParam();
  const SafeTensors ref = load_safetensors(kSource / ("tests/fixtures/finetune/peft_step0_" + family + ".safetensors"));
  nlp::LoraConfig lc;
  lc.rank = 4;
  lc.alpha = 8;
  lc.dropout = 0;
  auto m = nlp::LoraModel::load(kSource / "tests/fixtures/llm" / family / "hf", lc);
  ASSERT_EQ(m->adapters().size(), 14u);
  for (const nlp::TrainableLora& a : m->adapters()) {
    Parameter(a.a).set_value(formula_init(a, true));
    Parameter(a.b).set_value(formula_init(a, false));
  }
  // The script's two sequences (SEQS).
  const std::vector<nlp::TrainExample> ex = {
      {{1, 17, 42, 99, 3, 250, 7, 8, 9}, {0, 0, 0, 0, 0, 1, 1, 1, 1}, 1},
      {{1, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 1, 1}, 2}};
  const std::vector<Parameter> params = m->parameters();
  // Each sequence its own forward, and both packed into one (NOTE [Packed training batches]):
  // PEFT ran them separately, so the packed forward must keep each sequence's attention to itself.
  for (const bool packed : {false, true}) {
    auto vg = value_and_grad(
        [&](const std::vector<Tensor>&) {
          return mul(packed ? m->batch_nll_sum(ex) : add(m->nll_sum(ex[0]), m->nll_sum(ex[1])), 1.0 / 11);
        },
        GradPosition::none(), params);
    const ValueAndGrad r = vg({});
    const std::string form = packed ? " packed" : " one by one";
    EXPECT_NEAR(r.value.item<float>(), ref.at("step0.loss").to_vector<float>()[0], 1e-4) << family << form;
    for (size_t i = 0; i < params.size(); ++i) {
      const auto got = r.weight_grads[i].contiguous().to_vector<float>();
      const auto want = ref.at("grad." + params[i].name()).to_vector<float>();
      ASSERT_EQ(got.size(), want.size()) << params[i].name();
      double worst = 0;
      for (size_t j = 0; j < got.size(); ++j) worst = std::max(worst, std::abs(static_cast<double>(got[j]) - want[j]));
      EXPECT_LE(worst, 1e-4) << family << form << " " << params[i].name();
    }
  }
}



}  // namespace
}  // namespace spore::test

namespace spore::test {
namespace {

// A fresh adapter is PEFT's: A Kaiming-uniform within 1 / sqrt(in), B zero, so the adapted model
// is the base: its logits are the engine's own inference forward's (through the KV cache).
TEST_P(FamilyParity, AFreshAdapterIsTheBaseModel) {
  const std::string family = GetParam();
  const fs::path path = kSource / "tests/fixtures/llm" / family / "hf";
  nlp::LoraConfig lc;
  lc.rank = 8;
  auto m = nlp::LoraModel::load(path, lc);
  for (const nlp::TrainableLora& a : m->adapters()) {
    const Tensor& A = a.a.value();
    const double bound = 1.0 / std::sqrt(static_cast<double>(A.size(1)));
    double sq = 0;
    for (float v : A.to_vector<float>()) {
      ASSERT_LE(std::abs(v), bound);
      sq += static_cast<double>(v) * v;
    }
    // Uniform on [-b, b]: mean square b^2 / 3 (within 25% for these few values).
    EXPECT_NEAR(sq / static_cast<double>(A.numel()), bound * bound / 3, 0.25 * bound * bound / 3) << a.a.name();
    for (float v : a.b.value().to_vector<float>()) ASSERT_EQ(v, 0.0f);
  }
  nlp::LoadOptions lo;
  lo.numerics = nlp::LoadOptions::Numerics::kReference;
  const nlp::LoadedModel engine = nlp::load_model(path, lo);
  const std::vector<int32_t> ids = {1, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  auto cache = engine.lm->make_cache(1, 16, DType::kFloat32);
  nlp::SequenceChunk c{0, 0, ids, true};
  const std::vector<float> want = engine.lm->forward({&c, 1}, *cache).to_vector<float>();
  const std::vector<float> got = m->logits(ids).to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-4) << family << " value " << i;
}

INSTANTIATE_TEST_SUITE_P(DenseFamilies, FamilyParity,
                         ::testing::Values("qwen2", "qwen3", "mistral", "gemma", "gemma2", "gemma3", "granite", "olmo2"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace spore::test
