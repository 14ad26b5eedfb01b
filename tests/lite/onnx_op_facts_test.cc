// NOTE [Op facts]: every op whose registry row names a one-to-one ONNX op is written as that op
// by the ONNX writer, read back as the same registry op by Lite's ONNX reader, and gives the
// framework's result when Lite runs the file.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <fstream>

#include "../io/io_test_util.h"
#include "probe/op_matrix_factories.h"
#include "spore/export.h"
#include "spore/lite.h"
#include "spore/onnx.h"

namespace spore::test {
namespace {

TEST(OnnxOpFacts, EveryOneToOneOpRoundTripsThroughOnnx) {
  TempDir tmp;
  int checked = 0;
  for (const OpDef& d : all_ops()) {
    if (!d.facts.onnx || !*d.facts.onnx) continue;
    SCOPED_TRACE(d.name);
    const probe::OpFactory* factory = probe::op_factory(d.id);
    ASSERT_NE(factory, nullptr);
    const std::optional<probe::OpCase> c = (*factory)(DType::kFloat32);
    ASSERT_TRUE(c.has_value()) << "no float32 sample";
    const TensorsFn fn = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{c->run(in, false)}; };
    ExportOptions options;
    options.optimize = false;
    const std::string bytes = ir_to_onnx_bytes(trace_to_ir(fn, c->inputs, options));

    ::onnx::ModelProto model;
    ASSERT_TRUE(model.ParseFromString(bytes));
    bool written = false;
    for (const auto& node : model.graph().node()) written |= node.op_type() == d.facts.onnx;
    EXPECT_TRUE(written) << "the writer did not write " << d.facts.onnx;

    const std::span<const uint8_t> span((const uint8_t*)bytes.data(), bytes.size());
    const ir::Model back = onnx::read_onnx_bytes(span, std::string(d.name) + ".onnx");
    bool read = false;
    for (const ir::Node& n : back.graph.nodes) read |= n.def == &d;
    EXPECT_TRUE(read) << "the reader did not map " << d.facts.onnx << " back to " << d.name;

    const auto file = tmp / (std::string(d.name) + ".onnx");
    std::ofstream(file, std::ios::binary) << bytes;
    lite::Model lite_model = lite::Model::build_from_file(file);
    const Tensor got = lite_model.predict(c->inputs)[0];
    const Tensor want = fn(c->inputs)[0];
    ASSERT_EQ(got.shape(), want.shape());
    ASSERT_EQ(got.dtype(), want.dtype());
    const auto g = got.contiguous().to(DType::kFloat64).to_vector<double>();
    const auto w = want.contiguous().to(DType::kFloat64).to_vector<double>();
    for (size_t i = 0; i < g.size(); ++i)
      if (!(std::isnan(g[i]) && std::isnan(w[i]))) {
        EXPECT_NEAR(g[i], w[i], 1e-6 * (1 + std::fabs(w[i]))) << "element " << i;
      }
    ++checked;
  }
  EXPECT_GE(checked, 20);
}

}  // namespace
}  // namespace spore::test
