// A graph with a collective (NOTE [Collective ops]) is not exported, and neither ONNX nor Lite
// accepts one: they run one process, where a collective has no peer. Each refusal is kUnsupported
// naming the op.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "spore/export.h"
#include "spore/ir.h"
#include "spore/lite.h"
#include "spore/ops.h"

namespace spore {
namespace {

Tensor example() { return Tensor::from_vector<float>({1.0f, -2.0f}, Shape{2}); }

void expect_unsupported_naming_all_reduce(const std::function<void()>& f, const char* who) {
  try {
    f();
    ADD_FAILURE() << who << ": no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported) << who << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find("all_reduce"), std::string::npos) << who << ": " << e.what();
  }
}

// neg(x) traced to the IR, then its node turned into an all_reduce (the IR itself can hold one:
// an op-set 8 file written by hand or by another tool).
ir::Model ir_with_all_reduce() {
  ir::Model m = trace_to_ir([](const std::vector<Tensor>& in) { return std::vector<Tensor>{neg(in[0])}; }, {example()});
  EXPECT_EQ(m.graph.nodes.size(), 1u);
  m.graph.nodes[0].def = &op_def(OpId::k_all_reduce);
  m.graph.nodes[0].attrs = Attrs::of(int64_t{0}, false);
  return m;
}

TEST(CollectiveExport, TraceToIrRefuses) {
  expect_unsupported_naming_all_reduce(
      [] {
        trace_to_ir(
            [](const std::vector<Tensor>& in) {
              return std::vector<Tensor>{dispatch1(OpId::k_all_reduce, {in[0]}, Attrs::of(int64_t{0}, false))};
            },
            {example()});
      },
      "trace_to_ir");
}

TEST(CollectiveExport, OnnxWriterRefuses) {
  const ir::Model m = ir_with_all_reduce();
  expect_unsupported_naming_all_reduce([&] { ir_to_onnx_bytes(m); }, "ir_to_onnx_bytes");
}

TEST(CollectiveExport, LiteRefusesAtBuild) {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("spore-collective-" + std::to_string(::getpid()) + ".spore");
  ir::write_model(file, ir_with_all_reduce());
  expect_unsupported_naming_all_reduce([&] { lite::Model::build_from_file(file); }, "lite::Model");
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace spore
