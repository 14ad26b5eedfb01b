// The graph container: building, rewriting, validation (NOTE [Graphs]).
#include "spore/graph.h"

#include <gtest/gtest.h>

#include "spore/ops.h"
#include "test_util.h"

namespace spore::graph {
namespace {
using spore::test::expect_error;

TensorMeta f32(Shape s) { return {s, DType::kFloat32}; }

TEST(Graph, BuildsNodesOverValueIds) {
  Graph g;
  ValueId x = g.add_input(f32({2}), "x");
  ValueId w = g.add_captured(ones({2}), "w");
  TensorMeta out[] = {f32({2})};
  ValueId xs[] = {x, w};
  int mul = g.add_node(op_def(OpId::k_mul), {}, xs, out);
  ValueId y = g.outputs(mul)[0];
  g.set_outputs({y});
  g.validate();
  EXPECT_EQ(g.num_nodes(), 1u);
  EXPECT_EQ(g.value(y).node, mul);
  EXPECT_EQ(g.value(w).kind, ValueKind::kCaptured);
  EXPECT_EQ(g.use_counts()[x], 1);
  EXPECT_EQ(g.use_counts()[y], 1);
}

TEST(Graph, RemoveAndReplaceKeepProducersConsistent) {
  Graph g;
  ValueId x = g.add_input(f32({2}), "x");
  TensorMeta out[] = {f32({2})};
  ValueId a[] = {x, x};
  int n0 = g.add_node(op_def(OpId::k_add), {}, a, out);
  int n1 = g.add_node(op_def(OpId::k_mul), {}, a, out);
  ValueId y1 = g.outputs(n1)[0];
  ValueId b[] = {g.outputs(n0)[0], y1};
  int n2 = g.add_node(op_def(OpId::k_sub), {}, b, out);
  g.set_outputs({g.outputs(n2)[0]});
  g.replace_uses(g.outputs(n0)[0], y1);  // as CSE would
  g.remove_nodes({true, false, false});
  g.validate();
  ASSERT_EQ(g.num_nodes(), 2u);
  EXPECT_EQ(g.value(y1).node, 0);
  EXPECT_EQ(g.inputs(1)[0], y1);
}

TEST(Graph, ValidateNamesAReadBeforeItsProducer) {
  Graph g;
  ValueId x = g.add_input(f32({2}), "x");
  TensorMeta out[] = {f32({2})};
  ValueId a[] = {x, x};
  int n0 = g.add_node(op_def(OpId::k_add), {}, a, out);
  ValueId b[] = {g.outputs(n0)[0], x};
  g.add_node(op_def(OpId::k_mul), {}, b, out);
  g.set_input(0, 0, g.outputs(1)[0]);  // a cycle: node 0 now reads node 1's output
  expect_error([&] { g.validate(); }, ErrorCode::kValue, "before any node makes it");
}

}  // namespace
}  // namespace spore::graph
