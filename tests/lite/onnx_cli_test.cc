// `spore lite run model.onnx --input NAME=FILE.npy --output DIR` (NOTE [ONNX]): an ONNX node-test
// case from the committed subset, run through the command line, writes ONNX's expected output.
// `spore lite quantize FILE --out OUT` (NOTE [Dynamic int8 products]) writes a model that runs.
#include <gtest/gtest.h>

#include <cstring>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "../io/io_test_util.h"
#include "onnx_build_util.h"
#include "spore/data.h"
#include "spore/ops.h"

namespace spore::test {
namespace {

namespace fs = std::filesystem;

TEST(OnnxCli, LiteRunRunsAnOnnxFileAndWritesItsOutputs) {
  TempDir out;
  const fs::path c = fs::path(SPORE_SOURCE_DIR) / "tests/fixtures/onnx/node/test_basic_conv_without_padding";
  const std::string cmd = std::string(SPORE_BINARY_DIR) + "/bin/spore lite run " + (c / "model.onnx").string() + " --input x=" +
                          (c / "input_0.npy").string() + " --input W=" + (c / "input_1.npy").string() + " --output " +
                          out.path().string() + " --repeat 1 > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const Tensor got = data::load_npy((out / "y.npy").string());
  const Tensor want = data::load_npy((c / "output_0.npy").string());
  EXPECT_EQ(got.shape(), want.shape());
  EXPECT_EQ(got.to_vector<float>(), want.to_vector<float>());  // a 3x3 convolution of small integers: exact
}

// A uint16 model (carried in int64, NOTE [ONNX carried types]) takes the '>u2' file NumPy wrote:
// it loads as int32 and is widened to the input's int64; the sum wraps as uint16 does, and the
// output is written as uint16 again.
TEST(OnnxCli, LiteRunFeedsANarrowIntegerFileToACarriedInput) {
  TempDir out;
  ::onnx::ModelProto m = base_model(17);
  add_input(m, "x", {"4"}, ::onnx::TensorProto::UINT16);
  add_node(m, "Add", {"x", "x"}, {"y"});
  add_output(m, "y");
  const auto b = bytes_of(m);
  std::ofstream((out / "add.onnx"), std::ios::binary).write((const char*)b.data(), (std::streamsize)b.size());
  const fs::path x = fs::path(SPORE_SOURCE_DIR) / "tests/fixtures/data/be_u2_extremes.npy";  // 0, 1, 65535, 40000
  const std::string cmd = std::string(SPORE_BINARY_DIR) + "/bin/spore lite run " + (out / "add.onnx").string() + " --input x=" +
                          x.string() + " --output " + out.path().string() + " --repeat 1 > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  // The output comes back as uint16, the type the graph computes in (NOTE [ONNX carried types]):
  // a '<u2' file, read here from its bytes (Spore loads uint16 .npy as int32).
  std::ifstream f(out / "y.npy", std::ios::binary);
  const std::string raw((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ASSERT_GT(raw.size(), 8u);
  EXPECT_NE(raw.find("'descr': '<u2'"), std::string::npos) << raw.substr(0, 80);
  const std::string body = raw.substr(raw.size() - 8);
  std::vector<uint16_t> got(4);
  std::memcpy(got.data(), body.data(), 8);  // little-endian host (x86-64, aarch64)
  EXPECT_EQ(got, (std::vector<uint16_t>{0, 2, 65534, 14464}));  // 80000 mod 65536
  const Tensor y = data::load_npy((out / "y.npy").string());
  EXPECT_EQ(y.dtype(), DType::kInt32);
  EXPECT_EQ(y.to_vector<int32_t>(), (std::vector<int32_t>{0, 2, 65534, 14464}));
}

TEST(OnnxCli, LiteQuantizeWritesAModelThatLiteRunRuns) {
  TempDir out;
  const fs::path q = fs::path(SPORE_SOURCE_DIR) / "tests/fixtures/onnx/quantize";
  const std::string bin = std::string(SPORE_BINARY_DIR) + "/bin/spore";
  const std::string quantize = bin + " lite quantize " + (q / "mlp.onnx").string() + " --out " +
                               (out / "mlp.int8.onnx").string() + " > " + (out / "report.txt").string();
  ASSERT_EQ(std::system(quantize.c_str()), 0) << quantize;
  std::ifstream report(out / "report.txt");
  const std::string text((std::istreambuf_iterator<char>(report)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("quantized 2 weights to int8 (2 products, 0 convolutions; dynamic"), std::string::npos) << text;
  const std::string run = bin + " lite run " + (out / "mlp.int8.onnx").string() + " --input x=" + (q / "x.npy").string() +
                          " --output " + out.path().string() + " --repeat 1 > /dev/null";
  ASSERT_EQ(std::system(run.c_str()), 0) << run;
  const Tensor got = data::load_npy((out / "y.npy").string()), want = data::load_npy((q / "int8.npy").string());
  EXPECT_EQ(got.shape(), want.shape());
  EXPECT_LE(max_abs_diff(got, want), 1e-5);  // ONNX Runtime on the same quantization (|y| < 2)
  // --format qdq on convolutions and a Gemm.
  const std::string qdq = bin + " lite quantize " + (q / "cnn.onnx").string() + " --format qdq --out " +
                          (out / "cnn.qdq.onnx").string() + " > " + (out / "report.txt").string();
  ASSERT_EQ(std::system(qdq.c_str()), 0) << qdq;
  std::ifstream report2(out / "report.txt");
  const std::string text2((std::istreambuf_iterator<char>(report2)), std::istreambuf_iterator<char>());
  EXPECT_NE(text2.find("quantized 5 weights to int8 (1 product, 4 convolutions; QDQ"), std::string::npos) << text2;
  const std::string run2 = bin + " lite run " + (out / "cnn.qdq.onnx").string() + " --input x=" +
                           (q / "cnn_x.npy").string() + " --output " + out.path().string() + " --repeat 1 > /dev/null";
  ASSERT_EQ(std::system(run2.c_str()), 0) << run2;
  const Tensor got2 = data::load_npy((out / "y.npy").string()), want2 = data::load_npy((q / "cnn_qdq.npy").string());
  EXPECT_EQ(got2.shape(), want2.shape());
  EXPECT_LE(max_abs_diff(got2, want2), 1e-4);
  // A format that is not one of the two is refused by the parser, and nothing is written.
  const std::string bad = bin + " lite quantize " + (q / "cnn.onnx").string() + " --format int4 --out " +
                          (out / "bad.onnx").string() + " > /dev/null 2>&1";
  EXPECT_NE(std::system(bad.c_str()), 0);
  EXPECT_FALSE(fs::exists(out / "bad.onnx"));
}

}  // namespace
}  // namespace spore::test
