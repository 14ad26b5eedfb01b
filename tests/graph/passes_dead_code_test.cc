// Dead-code elimination (src/graph/passes/dead_code.cc): the graph it leaves and what it computes.
#include <gtest/gtest.h>

#include "graph_eval.h"
#include "test_util.h"

namespace spore::graph {
namespace {
using test::Builder;

TEST(DeadCode, DropsNodesWhoseOutputsNobodyReads) {
  Builder b;
  ValueId x = b.input(spore::test::make_tensor({1, -2, 3}, {3}, DType::kFloat32));
  ValueId unused = b.node(OpId::k_exp, {x});
  b.node(OpId::k_neg, {unused});  // reads only a dead value: dead too
  ValueId y = b.node(OpId::k_mul, {x, x});
  b.outputs({y});
  const auto before = b.run();
  PassStats s = eliminate_dead_code(b.g);
  b.g.validate();
  EXPECT_EQ(b.ops(), std::vector<OpId>{OpId::k_mul});
  EXPECT_EQ(s.nodes_removed, 2);
  EXPECT_EQ(s.bytes_saved, 2 * 3 * 4);
  test::expect_bitwise(b.run(), before);
  EXPECT_EQ(b.run()[0].to_vector<float>(), (std::vector<float>{1, 4, 9}));
}

TEST(DeadCode, KeepsInPlaceWritersAndWhatTheyRead) {
  // w <- x * 2 (assign writes w), no graph output reads it: the write is the point.
  Builder b;
  Tensor w = zeros({3});
  ValueId wv = b.captured(w, "w");
  ValueId x = b.input(spore::test::make_tensor({1, 2, 3}, {3}, DType::kFloat32));
  ValueId two = b.constant(full({}, 2.0));
  ValueId doubled = b.node(OpId::k_mul, {x, two});
  b.node_n(OpId::k_assign, {wv, doubled});
  ValueId dead = b.node(OpId::k_exp, {x});
  (void)dead;
  b.outputs({});
  PassStats s = eliminate_dead_code(b.g);
  b.g.validate();
  EXPECT_EQ(b.ops(), (std::vector<OpId>{OpId::k_mul, OpId::k_assign}));
  EXPECT_EQ(s.nodes_removed, 1);
  b.run();
  EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{2, 4, 6}));
}

TEST(DeadCode, KeepsOptimizerUpdatesWithNoOutputs) {
  Builder b;
  Tensor p = ones({4}), buf = zeros({4});
  ValueId pv = b.captured(p, "p"), bufv = b.captured(buf, "buf");
  ValueId g = b.input(full({4}, 0.5));
  ValueId scaled = b.node(OpId::k_mul, {g, b.constant(full({}, 2.0))});
  b.node_n(OpId::k_sgd_update, {pv, scaled, bufv}, Attrs::of(0.1, 0.0, 0.0, 0.0, false, true));
  b.outputs({});
  eliminate_dead_code(b.g);
  EXPECT_EQ(b.ops(), (std::vector<OpId>{OpId::k_mul, OpId::k_sgd_update}));
  b.run();
  for (float v : p.to_vector<float>()) EXPECT_FLOAT_EQ(v, 1.0f - 0.1f * 1.0f);
}

TEST(DeadCode, KeepsNodesWhoseSubgraphsWrite) {
  // A node standing for cond/while_loop: its output is unread, but its body assigns in place.
  Builder body;
  ValueId p = body.captured(zeros({2}), "p");
  ValueId v = body.input(full({2}, 1.0));
  body.node_n(OpId::k_assign, {p, v});
  Builder pure;
  ValueId u = pure.input(full({2}, 1.0));
  pure.outputs({pure.node(OpId::k_exp, {u})});

  Builder b;
  ValueId x = b.input(full({2}, 3.0));
  ValueId effect = b.node(OpId::k_copy, {x});
  ValueId no_effect = b.node(OpId::k_copy, {x});
  b.g.set_subgraphs(b.g.value(effect).node, {std::make_shared<const Graph>(body.g)});
  b.g.set_subgraphs(b.g.value(no_effect).node, {std::make_shared<const Graph>(pure.g)});
  b.outputs({});
  eliminate_dead_code(b.g);
  b.g.validate();
  ASSERT_EQ(b.g.num_nodes(), 1u);
  EXPECT_EQ(b.g.subgraphs(0)[0]->node(0).op(), OpId::k_assign);
}

TEST(DeadCode, GraphOutputsAndTheirProducersStay) {
  Builder b;
  ValueId x = b.input(full({2}, 3.0));
  ValueId a = b.node(OpId::k_exp, {x});
  ValueId c = b.node(OpId::k_neg, {a});
  b.outputs({a, c});
  EXPECT_EQ(eliminate_dead_code(b.g).nodes_removed, 0);
  EXPECT_EQ(b.g.num_nodes(), 2u);
}

}  // namespace
}  // namespace spore::graph
