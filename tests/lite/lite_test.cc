// Spore Lite against the framework's own eager ops: build, predict, symbolic batch, targets, the
// version check first, and every bad input (NOTE [Lite runtime]).
#include "spore/lite.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "../io/io_test_util.h"
#include "ir_test_models.h"
#include "spore/ops.h"

namespace spore::test {
namespace {

using lite::Context;
using lite::Model;
using lite::ModelType;

Tensor sample_x(int64_t batch) { return reshape(arange(-3, -3 + batch * 3 * 0.5, 0.5, DType::kFloat32), {batch, 3}); }

// The framework's answer, eagerly, with the same weights.
Tensor eager_dense_relu(const ir::Model& m, const Tensor& x) {
  return relu(add(matmul(x, m.graph.values[1].data), m.graph.values[2].data));
}

TEST(Lite, PredictsWhatTheFrameworkComputesBitForBit) {
  TempDir dir;
  const ir::Model m = dense_relu_model(false);
  ir::write_model(dir / "dense.spore", m);
  Model model = Model::build_from_file(dir / "dense.spore", ModelType::kSpore);
  ASSERT_EQ(model.inputs().size(), 1u);
  EXPECT_EQ(model.inputs()[0].str(), "x: float32[2, 3]");
  EXPECT_EQ(model.outputs()[0].str(), "y: float32[2, 4]");
  EXPECT_EQ(model.target(), "cpu");
  const Tensor x = sample_x(2);
  const auto y = model.predict({x});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0].to_vector<float>(), eager_dense_relu(m, x).to_vector<float>());  // max abs error 0.0
  const auto by_name = model.predict(std::map<std::string, Tensor>{{"x", x}});
  EXPECT_EQ(by_name[0].to_vector<float>(), y[0].to_vector<float>());
}

TEST(Lite, ASymbolicBatchTakesAnyExtentAndResizeFixesIt) {
  TempDir dir;
  const ir::Model m = dense_relu_model(true);
  ir::write_model(dir / "dense.spore", m);
  Model model = Model::build_from_file(dir / "dense.spore");
  EXPECT_EQ(model.inputs()[0].str(), "x: float32[batch, 3]");
  for (int64_t batch : {1, 5, 2}) {
    const Tensor x = sample_x(batch);
    EXPECT_EQ(model.predict({x})[0].to_vector<float>(), eager_dense_relu(m, x).to_vector<float>()) << batch;
  }
  model.resize({{"x", {4, 3}}});
  EXPECT_NO_THROW(model.predict({sample_x(4)}));
  expect_error([&] { model.predict({sample_x(5)}); }, ErrorCode::kValue, "input 'x' has shape [5, 3]");
  expect_error([&] { model.resize({{"x", {4, 7}}}); }, ErrorCode::kValue, "dimension 1", "is fixed at 3");
  expect_error([&] { model.resize({{"z", {4, 3}}}); }, ErrorCode::kValue, "no input 'z'");
}

TEST(Lite, TargetsAreTriedInOrderAndTheBuiltOneIsReported) {
  TempDir dir;
  ir::write_model(dir / "dense.spore", dense_relu_model(false));
  Model model = Model::build_from_file(dir / "dense.spore", ModelType::kAuto, Context{{"cuda", "cpu"}, 1});
  EXPECT_EQ(model.target(), "cpu");
  ASSERT_EQ(model.skipped_targets().size(), 1u);
  EXPECT_NE(model.skipped_targets()[0].find("cuda: "), std::string::npos);
  expect_error([&] { Model::build_from_file(dir / "dense.spore", ModelType::kAuto, Context{{"cuda", "npu"}, 1}); },
               ErrorCode::kDevice, "none of the context's targets is available", "npu: not built into this Spore",
               "add \"cpu\"");
}

TEST(Lite, TheVersionIsCheckedBeforeAnyTarget) {
  TempDir dir;
  auto bytes = ir::model_to_bytes(dense_relu_model(false));
  const uint32_t future = ir::kNewestVersion + 1;
  std::memcpy(bytes.data() + 8, &future, 4);
  std::ofstream(dir / "future.spore", std::ios::binary).write((const char*)bytes.data(), (std::streamsize)bytes.size());
  // No target of this context exists: still the version is what is reported.
  expect_error([&] { Model::build_from_file(dir / "future.spore", ModelType::kSpore, Context{{"npu"}, 1}); },
               ErrorCode::kVersion, "IR version " + std::to_string(future), "reads versions 1 to 2",
               "--to-version 2", "a Spore build that reads version");
}

TEST(Lite, DownLevelFilesBuildAndPredictTheSame) {
  TempDir dir;
  const ir::Model m = dense_relu_model(false);
  ir::write_model(dir / "v1.spore", m, {1});
  ir::write_model(dir / "v2.spore", m, {2});
  const Tensor x = sample_x(2);
  EXPECT_EQ(Model::build_from_file(dir / "v1.spore").predict({x})[0].to_vector<float>(),
            Model::build_from_file(dir / "v2.spore").predict({x})[0].to_vector<float>());
}

TEST(Lite, WrongInputsNameTheInputAndTheSignature) {
  TempDir dir;
  ir::write_model(dir / "dense.spore", dense_relu_model(false));
  Model model = Model::build_from_file(dir / "dense.spore");
  expect_error([&] { model.predict(std::vector<Tensor>{}); }, ErrorCode::kValue, "got 0 inputs", "x: float32[2, 3]");
  expect_error([&] { model.predict({sample_x(2).to(DType::kFloat16)}); }, ErrorCode::kValue, "input 'x' is float16",
               "expected x: float32[2, 3]");
  expect_error([&] { model.predict({sample_x(3)}); }, ErrorCode::kValue, "input 'x' has shape [3, 3]");
  expect_error([&] { model.predict({reshape(sample_x(2), {6})}); }, ErrorCode::kValue, "has shape [6]");
  expect_error([&] { model.predict(std::map<std::string, Tensor>{{"q", sample_x(2)}}); }, ErrorCode::kValue,
               "no tensor for input x");
}

TEST(Lite, BadFilesGetTypedErrorsNeverACrash) {
  TempDir dir;
  const auto good = ir::model_to_bytes(dense_relu_model(false));
  auto write = [&](const std::string& name, std::vector<uint8_t> b) {
    std::ofstream(dir / name, std::ios::binary).write((const char*)b.data(), (std::streamsize)b.size());
    return dir / name;
  };
  expect_error([&] { Model::build_from_file(dir / "missing.spore"); }, ErrorCode::kIO, "missing.spore");
  auto flipped = good;
  flipped[100] ^= 0x40;
  expect_error([&] { Model::build_from_file(write("flipped.spore", flipped)); }, ErrorCode::kFormat, "checksum mismatch");
  for (size_t cut = 0; cut < good.size(); cut += 97)
    EXPECT_THROW(Model::build_from_file(write("cut.spore", std::vector<uint8_t>(good.begin(), good.begin() + cut))), Error);
  expect_error([&] { Model::build_from_file(write("x.bin", {1, 2, 3})); }, ErrorCode::kFormat, "pass the ModelType");
  expect_error([&] { Model::build_from_file(write("ok.spore", good), ModelType::kONNX); }, ErrorCode::kFormat,
               "is a spore file, but ModelType onnx was asked for");
}

TEST(Lite, AFileWhoseDeclaredShapesDisagreeWithItsOpsIsRefusedAtBuild) {
  TempDir dir;
  ir::Model m = dense_relu_model(false);
  m.graph.values[3].dims = fixed_dims({2, 5});  // matmul makes [2, 4]
  m.graph.values[4].dims = fixed_dims({2, 5});
  m.graph.values[5].dims = fixed_dims({2, 5});
  ir::write_model(dir / "lying.spore", m);
  expect_error([&] { Model::build_from_file(dir / "lying.spore"); }, ErrorCode::kFormat, "node 0 (matmul) computes float32[2, 4]");
}

}  // namespace
}  // namespace spore::test
