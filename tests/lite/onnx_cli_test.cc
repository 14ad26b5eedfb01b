// `spore lite run model.onnx --input NAME=FILE.npy --output DIR` (NOTE [ONNX]): an ONNX node-test
// case from the committed subset, run through the command line, writes ONNX's expected output.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "../io/io_test_util.h"
#include "spore/data.h"

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

}  // namespace
}  // namespace spore::test
