// Export: a traced function or Cell written as IR and run in Lite gives the framework's outputs
// exactly; symbolic batch dimensions; down-level versions; what cannot be exported (NOTE [Export]).
#include "spore/export.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "spore/autograd.h"
#include "spore/lite.h"
#include "spore/nn/activation.h"
#include "spore/nn/dense.h"
#include "spore/nn/normalization.h"
#include "spore/ops.h"
#include "spore/optim.h"
#include "test_util.h"

namespace spore {
namespace {
using test::expect_error;

std::filesystem::path temp_file(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("spore_export_" + std::to_string(getpid()) + "_" + name);
}

std::shared_ptr<nn::SequentialCell> make_net() {
  auto net = std::make_shared<nn::SequentialCell>(std::vector<nn::CellPtr>{
      std::make_shared<nn::Dense>(4, 8, true, nullptr, 11), std::make_shared<nn::BatchNorm1d>(8),
      std::make_shared<nn::ReLU>(), std::make_shared<nn::Dense>(8, 3, true, nullptr, 12)});
  net->set_train(false);
  return net;
}

Tensor input(int64_t batch) { return reshape(arange(0, (double)batch * 4, 1, DType::kFloat32), {batch, 4}) * 0.37 - 1.1; }

TEST(Export, ACellRunsInLiteExactlyAsInTheFramework) {
  auto net = make_net();
  const Tensor x = input(5);
  const auto want = (*net)(x).to_vector<float>();
  const auto path = temp_file("cell.spore");
  export_model(*net, {x}, path);
  const ir::Model m = ir::read_model(path);
  EXPECT_EQ(m.ir_version, ir::kNewestVersion);
  std::vector<std::string> params;
  for (const auto& v : m.graph.values)
    if (v.kind == ir::ValueKind::kParameter) params.push_back(v.name);
  for (const char* name : {"0.weight", "0.bias", "3.weight", "3.bias"})
    EXPECT_NE(std::find(params.begin(), params.end(), name), params.end()) << name;
  lite::Model model = lite::Model::build_from_file(path);
  EXPECT_EQ(model.inputs()[0].str(), "x: float32[5, 4]");
  EXPECT_EQ(model.predict({x})[0].to_vector<float>(), want);  // max abs error 0.0
  std::filesystem::remove(path);
}

TEST(Export, ASymbolicBatchServesEveryBatchSize) {
  auto net = make_net();
  const auto path = temp_file("batch.spore");
  ExportOptions o;
  o.dynamic_axes = {{0, {{0, "batch"}}}};
  export_model(*net, {input(2)}, path, o);
  lite::Model model = lite::Model::build_from_file(path);
  EXPECT_EQ(model.inputs()[0].str(), "x: float32[batch, 4]");
  EXPECT_EQ(model.outputs()[0].str(), "y: float32[batch, 3]");
  for (int64_t b : {1, 3, 7}) EXPECT_EQ(model.predict({input(b)})[0].to_vector<float>(), (*net)(input(b)).to_vector<float>()) << b;
  expect_error([&] { export_model(*net, {input(2)}, path, ExportOptions().version(1).dynamic_axis(0, 0, "batch")); },
               ErrorCode::kVersion, "IR version 1 cannot hold", "symbolic dimension 'batch'");
  export_model(*net, {input(2)}, path, ExportOptions().version(1));  // fixed shapes: version 1 holds them
  EXPECT_EQ(ir::read_model(path).ir_version, 1u);
  std::filesystem::remove(path);
}

TEST(Export, AnOpThatBakesTheBatchInIsNamed) {
  Tensor w = reshape(arange(0, 12, 1, DType::kFloat32), {12, 1});
  TensorsFn fn = [w](const std::vector<Tensor>& in) { return std::vector<Tensor>{matmul(flatten(in[0], 1), w)}; };
  const Tensor x = reshape(arange(0, 24, 1, DType::kFloat32), {2, 3, 4});
  expect_error([&] { trace_to_ir(fn, {x}, ExportOptions().dynamic_axis(0, 0, "n")); }, ErrorCode::kValue, "(reshape)",
               "reshape with -1");
  TensorsFn ok = [w](const std::vector<Tensor>& in) { return std::vector<Tensor>{matmul(reshape(in[0], {-1, 12}), w)}; };
  const ir::Model m = trace_to_ir(ok, {x}, ExportOptions().dynamic_axis(0, 0, "n"));
  EXPECT_EQ(m.graph.values[m.graph.outputs[0]].dims[0].symbol, "n");
}

TEST(Export, ATrainingStepIsRefused) {
  auto net = make_net();
  optim::SGD opt(net->parameters(), 0.1);
  TensorsFn step = [&](const std::vector<Tensor>& in) {
    auto vg = value_and_grad([&](const std::vector<Tensor>& a) { return mean((*net)(a[0])); }, GradPosition::none(),
                             net->parameters());
    ValueAndGrad r = vg(in);
    opt.step(r.weight_grads);
    return std::vector<Tensor>{r.value};
  };
  expect_error([&] { trace_to_ir(step, {input(2)}); }, ErrorCode::kValue, "writes its input in place", "export an inference function");
}

}  // namespace
}  // namespace spore
