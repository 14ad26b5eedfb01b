// `spore lite quantize` and com.microsoft DynamicQuantizeMatMul (NOTE [Dynamic int8 products]),
// against ONNX Runtime's outputs (tools/make_lite_quantize_fixtures.py): a model quantized by
// Spore runs to exactly the outputs ONNX Runtime gives for the same model quantized in numpy by
// the same rule, and ONNX Runtime's own DynamicQuantizeMatMul files (int8, and uint8 with zero
// points) run to its outputs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "spore/data.h"
#include "spore/lite.h"
#include "spore/lite_quantize.h"
#include "test_util.h"

namespace spore {
namespace {

namespace fs = std::filesystem;
using test::expect_error;
using data::load_npy;
const fs::path kDir = fs::path(SPORE_SOURCE_DIR) / "tests" / "fixtures" / "onnx" / "quantize";

struct TempPath {
  explicit TempPath(const std::string& tag = "out")
      : p(fs::temp_directory_path() / ("spore-quantize-" + std::to_string(::getpid()) + "-" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name() + "-" + tag +
                                       ".onnx")) {}
  ~TempPath() { fs::remove(p); }
  fs::path p;
};

Tensor run(const fs::path& model, const std::string& input) {
  lite::Model m = lite::Model::build_from_file(model, lite::ModelType::kONNX, lite::Context{{"cpu"}, 1});
  return m.predict(std::vector<Tensor>{load_npy((kDir / input).string())})[0];
}

double max_abs(const Tensor& t) {
  double m = 0;
  for (double v : t.contiguous().to(DType::kFloat64).to_vector<double>()) m = std::max(m, std::fabs(v));
  return m;
}

TEST(LiteQuantize, SporesFileRunsToOnnxRuntimesOutputsOfTheSameQuantization) {
  TempPath out;
  const lite::QuantizeReport r = lite::quantize_onnx(kDir / "mlp.onnx", out.p);
  EXPECT_EQ(r.quantized, 2);  // the MatMul, and the Gemm with transB, alpha and C
  EXPECT_TRUE(r.skipped.empty());
  EXPECT_EQ(r.weight_bytes_before, (64 * 96 + 96 * 32) * 4);
  EXPECT_EQ(r.weight_bytes_after, 64 * 96 + 96 * 4 + 96 * 32 + 32 * 4);
  EXPECT_LT(r.file_bytes_after, r.file_bytes_before / 3);
  const Tensor got = run(out.p, "x.npy"), want = load_npy((kDir / "int8.npy").string());
  ASSERT_EQ(got.shape(), want.shape());
  EXPECT_LE(max_abs_diff(got, want), 1e-6 * max_abs(want));
  // Against float32: the accuracy the quantization costs on this model (ONNX Runtime's float run).
  const Tensor f = load_npy((kDir / "float.npy").string());
  EXPECT_LT(max_abs_diff(got, f) / max_abs(f), 0.02);
  EXPECT_GT(max_abs_diff(got, f), 0.0);  // it did quantize
}

Tensor run_cnn(const fs::path& model) { return run(model, "cnn_x.npy"); }

TEST(LiteQuantize, ConvolutionsRunToOnnxRuntimesOutputsOfTheSameQuantization) {
  // cnn.onnx: four convolutions (a bias or not, stride 2, groups, 1x1) and a Gemm head. The dynamic
  // form (ConvInteger chains) and the QDQ form against ONNX Runtime on the same quantization made in
  // numpy, and both against float32.
  const Tensor f = load_npy((kDir / "cnn_float.npy").string());
  struct Form {
    lite::QuantizeFormat format;
    const char *what, *want;
    double tolerance;  // relative to max |y|: exact integer sums (dynamic), float32 sums (qdq)
  };
  for (const Form& form : {Form{lite::QuantizeFormat::kDynamic, "dynamic", "cnn_dynamic.npy", 1e-6},
                           Form{lite::QuantizeFormat::kQdq, "qdq", "cnn_qdq.npy", 1e-5}}) {
    TempPath out(form.what);
    lite::QuantizeOptions o;
    o.format = form.format;
    const lite::QuantizeReport r = lite::quantize_onnx(kDir / "cnn.onnx", out.p, o);
    EXPECT_EQ(r.quantized, 5) << form.what;
    EXPECT_EQ(r.convolutions, 4) << form.what;
    EXPECT_TRUE(r.skipped.empty()) << form.what;
    const int64_t conv_weights = 8 * 3 * 9 + 16 * 8 * 9 + 16 * 4 * 9 + 12 * 16, gemm = 10 * 768;
    EXPECT_EQ(r.weight_bytes_before, (conv_weights + gemm) * 4) << form.what;
    EXPECT_EQ(r.weight_bytes_after, conv_weights + gemm + (8 + 16 + 16 + 12 + 10) * 4) << form.what;
    const Tensor got = run_cnn(out.p), want = load_npy((kDir / form.want).string());
    ASSERT_EQ(got.shape(), want.shape()) << form.what;
    EXPECT_LE(max_abs_diff(got, want), form.tolerance * max_abs(want)) << form.what;
    EXPECT_LT(max_abs_diff(got, f) / max_abs(f), 0.03) << form.what;
    EXPECT_GT(max_abs_diff(got, f), 0.0) << form.what;
  }
  // The numpy-made files themselves run to ONNX Runtime's outputs.
  for (const char* form : {"dynamic", "qdq"}) {
    const Tensor want = load_npy((kDir / ("cnn_" + std::string(form) + ".npy")).string());
    EXPECT_LE(max_abs_diff(run_cnn(kDir / ("cnn_" + std::string(form) + ".onnx")), want), 1e-5 * max_abs(want)) << form;
  }
}

TEST(LiteQuantize, ConvolutionsCanStayFloat32) {
  TempPath out;
  lite::QuantizeOptions o;
  o.convolutions = false;
  const lite::QuantizeReport r = lite::quantize_onnx(kDir / "cnn.onnx", out.p, o);
  EXPECT_EQ(r.quantized, 1);
  EXPECT_EQ(r.convolutions, 0);
  ASSERT_EQ(r.skipped.size(), 4u);
  for (const auto& s : r.skipped) {
    EXPECT_EQ(s.op, "Conv");
    EXPECT_NE(s.why.find("--no-conv"), std::string::npos) << s.why;
  }
  const Tensor f = load_npy((kDir / "cnn_float.npy").string());
  EXPECT_LT(max_abs_diff(run_cnn(out.p), f) / max_abs(f), 0.03);
}

TEST(LiteQuantize, OnnxRuntimesDynamicQuantizeMatMulFilesRunToItsOutputs) {
  const Tensor a = run(kDir / "mlp_int8.onnx", "x.npy"), want = load_npy((kDir / "int8.npy").string());
  EXPECT_LE(max_abs_diff(a, want), 1e-6 * max_abs(want));
  // uint8 weights with zero points: the definition's exact sums.
  const Tensor u = run(kDir / "uint8.onnx", "uint8_x.npy"), uwant = load_npy((kDir / "uint8_y.npy").string());
  EXPECT_LE(max_abs_diff(u, uwant), 1e-6 * max_abs(uwant));
}

TEST(LiteQuantize, QuantizingTwiceRewritesNothing) {
  TempPath once("once"), twice("twice");
  lite::quantize_onnx(kDir / "mlp.onnx", once.p);
  const lite::QuantizeReport r = lite::quantize_onnx(once.p, twice.p);
  EXPECT_EQ(r.quantized, 0);
  EXPECT_EQ(max_abs_diff(run(twice.p, "x.npy"), run(once.p, "x.npy")), 0.0);
}

TEST(LiteQuantize, BadInputIsATypedErrorAndWritesNothing) {
  TempPath out;
  expect_error([&] { lite::quantize_onnx(kDir / "mlp.onnx", kDir / "mlp.onnx"); }, ErrorCode::kValue, "is the input");
  expect_error([&] { lite::quantize_onnx(kDir / "no-such.onnx", out.p); }, ErrorCode::kIO, "no-such.onnx");
  expect_error([&] { lite::quantize_onnx(kDir / "x.npy", out.p); }, ErrorCode::kFormat, "not an ONNX model");
  EXPECT_FALSE(fs::exists(out.p));
}

}  // namespace
}  // namespace spore
