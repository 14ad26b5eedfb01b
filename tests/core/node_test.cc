// NOTE [Nodes]: the one node type; a list of nodes over one flat list of values.
#include <gtest/gtest.h>

#include "spore/node.h"
#include "spore/ops.h"

namespace spore {
namespace {

// Records every op into a NodeList, as a tracer would.
struct Recorder final : DispatchObserver {
  void on_op(const OpDef& d, std::span<const Tensor> inputs, const Attrs& attrs,
             std::span<const Tensor> outputs) override {
    nodes.record(d, inputs, attrs, outputs);
  }
  NodeList nodes;
};

TEST(Node, ARecordedOpKeepsItsOpAttributesAndValues) {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  Recorder rec;
  Tensor s, e;
  {
    DispatchObserverGuard guard(&rec);
    s = sum(a, {1});
    e = exp(s);
  }
  ASSERT_EQ(rec.nodes.size(), 2u);
  const Node& n0 = rec.nodes.nodes()[0];
  const Node& n1 = rec.nodes.nodes()[1];
  EXPECT_EQ(n0.op(), OpId::k_sum);
  EXPECT_EQ(n0.attrs.ints(0), (std::vector<int64_t>{1}));
  ASSERT_EQ(rec.nodes.inputs(n0).size(), 1u);
  ASSERT_EQ(rec.nodes.outputs(n0).size(), 1u);
  EXPECT_TRUE(same_value(rec.nodes.inputs(n0)[0], a));
  // sum's output is exp's input: one value, seen by both nodes.
  EXPECT_TRUE(same_value(rec.nodes.outputs(n0)[0], rec.nodes.inputs(n1)[0]));
  EXPECT_TRUE(same_value(rec.nodes.outputs(n1)[0], e));
  TensorMeta m = value_meta(rec.nodes.outputs(n0)[0]);
  EXPECT_EQ(m.shape, (Shape{2}));
  EXPECT_EQ(m.dtype, DType::kFloat32);
  rec.nodes.clear();
  EXPECT_TRUE(rec.nodes.empty());
}

TEST(Node, OpsWithNoOutputsAreNodesToo) {
  Tensor dst = Tensor::from_vector<float>({0, 0}, Shape{2});
  Recorder rec;
  {
    DispatchObserverGuard guard(&rec);
    dst.copy_(Tensor::from_vector<float>({1, 2}, Shape{2}));
  }
  ASSERT_EQ(rec.nodes.size(), 1u);
  const Node& n = rec.nodes.nodes()[0];
  EXPECT_EQ(n.op(), OpId::k_assign);
  EXPECT_EQ(n.num_outputs, 0u);
  EXPECT_TRUE(n.def->writes(0));  // what keeps a dead-code pass from dropping it
  EXPECT_TRUE(same_value(rec.nodes.inputs(n)[0], dst));
}

}  // namespace
}  // namespace spore
