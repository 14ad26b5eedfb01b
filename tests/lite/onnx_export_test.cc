// ONNX out (NOTE [ONNX]): the networks of onnx_test_models.h, exported by Spore and run in ONNX
// Runtime by tools/onnx_check.py (outputs committed in tests/fixtures/onnx/export), give the
// same outputs in the framework (eager) and in Lite on the committed file, within 1e-5 (f32).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "../io/io_test_util.h"
#include "lite/onnx_test_models.h"
#include "spore/data.h"
#include "spore/lite.h"
#include "spore/onnx.h"

namespace spore::test {
namespace {

namespace fs = std::filesystem;
const fs::path kDir = fs::path(SPORE_SOURCE_DIR) / "tests/fixtures/onnx/export";

double max_abs(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  EXPECT_EQ(a.dtype(), b.dtype());
  if (a.shape() != b.shape()) return INFINITY;
  const auto x = a.contiguous().to(DType::kFloat64).to_vector<double>(), y = b.contiguous().to(DType::kFloat64).to_vector<double>();
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::fabs(x[i] - y[i]));
  return m;
}

TEST(OnnxExport, FrameworkAndLiteMatchOnnxRuntime) {
  TempDir tmp;
  for (const auto& c : onnx_models::export_cases()) {
    SCOPED_TRACE(c.name);
    const fs::path dir = kDir / c.name;
    fs::path file = dir / "model.onnx";
    if (!c.small) {  // not committed (its size): exported again from the same fixed seeds
      file = tmp / (c.name + ".onnx");
      export_onnx(c.fn, c.inputs, file, c.options);
    }
    ASSERT_TRUE(fs::exists(file)) << "rerun tools/onnx_check.py (see its docstring)";
    std::vector<Tensor> inputs;
    for (size_t k = 0; k < c.inputs.size(); ++k) inputs.push_back(data::load_npy((dir / ("input_" + std::to_string(k) + ".npy")).string()));
    // The committed inputs are the ones the cases make: the fixtures belong to these networks.
    for (size_t k = 0; k < inputs.size(); ++k) EXPECT_EQ(max_abs(inputs[k], c.inputs[k]), 0.0);
    const std::vector<Tensor> eager = c.fn(inputs);
    lite::Model model = lite::Model::build_from_file(file);
    const std::vector<Tensor> lite_out = model.predict(inputs);
    ASSERT_EQ(lite_out.size(), eager.size());
    for (size_t k = 0; k < eager.size(); ++k) {
      const Tensor ort = data::load_npy((dir / ("ort_output_" + std::to_string(k) + ".npy")).string());
      EXPECT_LE(max_abs(eager[k], ort), c.ort_tolerance) << "output " << k << ": the framework against ONNX Runtime";
      EXPECT_LE(max_abs(lite_out[k], ort), c.ort_tolerance) << "output " << k << ": Lite on the ONNX file against ONNX Runtime";
      EXPECT_LE(max_abs(lite_out[k], eager[k]), 1e-5) << "output " << k << ": Lite on the ONNX file against the framework";
    }
  }
}

TEST(OnnxExport, AFreshExportPassesTheCheckerAndRunsInLite) {
  TempDir tmp;
  for (const auto& c : onnx_models::export_cases()) {
    if (!c.small) continue;  // exported afresh by the test above already
    SCOPED_TRACE(c.name);
    export_onnx(c.fn, c.inputs, tmp / (c.name + ".onnx"), c.options);  // the ONNX checker runs inside
    lite::Model model = lite::Model::build_from_file(tmp / (c.name + ".onnx"));
    const auto got = model.predict(c.inputs);
    const auto want = c.fn(c.inputs);
    for (size_t k = 0; k < want.size(); ++k) EXPECT_LE(max_abs(got[k], want[k]), 1e-5);
  }
}

// Issue 10 item 6: the same networks exported to Spore's IR and run in Lite give the framework's
// outputs within 1e-5 (float32).
TEST(OnnxExport, TheSmokeModelsInSporeIrMatchTheFramework) {
  TempDir tmp;
  for (const auto& c : onnx_models::export_cases()) {
    if (c.name != "addnet" && c.name != "mobilenet_v2" && c.name != "cnn") continue;
    SCOPED_TRACE(c.name);
    ExportOptions o = c.options;
    o.input_names = {};
    export_model(c.fn, c.inputs, tmp / (c.name + ".spore"), o);
    lite::Model model = lite::Model::build_from_file(tmp / (c.name + ".spore"));
    const auto got = model.predict(c.inputs);
    const auto want = c.fn(c.inputs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < want.size(); ++k) EXPECT_LE(max_abs(got[k], want[k]), 1e-5);
  }
}

TEST(OnnxExport, SymbolicDimensionsBecomeDimParams) {
  TempDir tmp;
  const auto cases = onnx_models::export_cases();
  const auto& c = cases[1];
  ASSERT_EQ(c.name, "mlp_dynamic_batch");
  export_onnx(c.fn, c.inputs, tmp / "m.onnx", c.options);
  lite::Model model = lite::Model::build_from_file(tmp / "m.onnx");
  EXPECT_EQ(model.inputs()[0].str(), "x: float32[batch, 8]");
  for (int64_t batch : {1, 6}) {
    const Tensor x = random_uniform({batch, 8}, 5, -1, 1);
    EXPECT_LE(max_abs(model.predict({x})[0], c.fn({x})[0]), 1e-5) << batch;
  }
}

TEST(OnnxExport, AnOpWithoutAnOnnxEquivalentIsRefusedByName) {
  TempDir tmp;
  TensorsFn fn = [](const std::vector<Tensor>& in) {
    const Tensor pos = Tensor::from_vector(std::vector<int64_t>{0, 1, 2}, Shape{3});
    const Tensor freq = Tensor::from_vector(std::vector<float>{1.0f, 0.5f}, Shape{2});
    return std::vector<Tensor>{dispatch1(OpId::k_rope, {in[0], pos, freq}, Attrs::of(int64_t{0}, false, 1.0, false, 0.0))};
  };
  expect_error([&] { export_onnx(fn, {random_uniform({3, 4}, 1)}, tmp / "r.onnx"); }, ErrorCode::kUnsupported,
               "export_onnx", "rope", "no ONNX");
}

}  // namespace
}  // namespace spore::test
