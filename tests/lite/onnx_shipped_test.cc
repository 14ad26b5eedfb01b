// ONNX models as shipped (NOTE [ONNX dynamic shapes]): PyTorch 1.13's exports of OCR, detector and
// voice-activity shapes (op sets 9 to 14: reflect Pad, negative-step Slice, Resize and Upsample,
// ConvTranspose, HardSwish, LSTM, GRU; symbolic and -1 extents) and If models, written by
// tools/make_onnx_shipped_fixtures.py with ONNX Runtime's outputs. Every data set of a case runs
// through one Lite model, twice over, so that each input signature's mapping is reused.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "spore/data.h"
#include "spore/lite.h"

namespace spore::test {
namespace {

namespace fs = std::filesystem;
const fs::path kDir = fs::path(SPORE_SOURCE_DIR) / "tests" / "fixtures" / "onnx" / "shipped";

// The largest |got - want| / (|want| + 1e-3) over the tensors.
double rel_error(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.shape(), want.shape());
  if (got.shape() != want.shape()) return INFINITY;
  const auto g = got.contiguous().to(DType::kFloat64).to_vector<double>(), w = want.contiguous().to(DType::kFloat64).to_vector<double>();
  double worst = 0;
  for (size_t i = 0; i < g.size(); ++i) worst = std::max(worst, std::fabs(g[i] - w[i]) / (std::fabs(w[i]) + 1e-3));
  return worst;
}

std::vector<std::string> cases() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(kDir))
    if (fs::exists(e.path() / "model.onnx")) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(OnnxShipped, EveryCaseMatchesOnnxRuntimeForEveryInputSignature) {
  const std::vector<std::string> all = cases();
  ASSERT_GE(all.size(), 7u);
  for (const std::string& name : all) {
    SCOPED_TRACE(name);
    const fs::path d = kDir / name;
    lite::Model model = lite::Model::build_from_file(d / "model.onnx", lite::ModelType::kONNX, lite::Context{{"cpu"}, 1});
    int sets = 0;
    while (fs::exists(d / ("set" + std::to_string(sets) + "_input_0.npy"))) ++sets;
    ASSERT_GE(sets, 1);
    for (int round = 0; round < 2; ++round)
      for (int j = 0; j < sets; ++j) {
        const std::string set = "set" + std::to_string(j) + "_";
        std::vector<Tensor> inputs;
        for (size_t k = 0; k < model.inputs().size(); ++k)
          inputs.push_back(data::load_npy((d / (set + "input_" + std::to_string(k) + ".npy")).string()));
        const std::vector<Tensor> outs = model.predict(inputs);
        for (size_t k = 0; k < outs.size(); ++k) {
          const fs::path want = d / (set + "output_" + std::to_string(k) + ".npy");
          ASSERT_TRUE(fs::exists(want)) << want;
          EXPECT_LT(rel_error(outs[k], data::load_npy(want.string())), 1e-4) << set << "output " << k << " round " << round;
        }
      }
  }
}

}  // namespace
}  // namespace spore::test
