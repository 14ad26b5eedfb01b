// Common-subexpression elimination (src/graph/passes/common_subexpressions.cc).
#include <gtest/gtest.h>

#include "graph_eval.h"
#include "test_util.h"

namespace spore::graph {
namespace {
using test::Builder;

TEST(CommonSubexpressions, MergesSameOpAttrsAndInputs) {
  Builder b;
  ValueId x = b.input(spore::test::make_tensor({1, 2, 3, 4, 5, 6}, {2, 3}, DType::kFloat32));
  ValueId y = b.input(spore::test::make_tensor({0.5, -1, 2}, {3}, DType::kFloat32));
  ValueId m1 = b.node(OpId::k_mul, {x, y});
  ValueId m2 = b.node(OpId::k_mul, {x, y});
  ValueId e1 = b.node(OpId::k_exp, {m1});
  ValueId e2 = b.node(OpId::k_exp, {m2});  // equal once m2 is m1: chains collapse in one sweep
  ValueId swapped = b.node(OpId::k_mul, {y, x});  // other operand order: not merged
  ValueId r1 = b.node(OpId::k_reshape, {x}, Attrs::of(std::vector<int64_t>{3, 2}));
  ValueId r2 = b.node(OpId::k_reshape, {x}, Attrs::of(std::vector<int64_t>{6}));  // other attrs
  ValueId s = b.node(OpId::k_add, {e1, e2});
  b.outputs({s, swapped, r1, r2});
  const auto before = b.run();
  PassStats st = eliminate_common_subexpressions(b.g);
  b.g.validate();
  EXPECT_EQ(st.nodes_removed, 2);
  EXPECT_EQ(b.count(OpId::k_mul), 2);
  EXPECT_EQ(b.count(OpId::k_exp), 1);
  EXPECT_EQ(b.count(OpId::k_reshape), 2);
  const Node& add = b.g.node((int)b.g.num_nodes() - 1);
  ASSERT_EQ(add.op(), OpId::k_add);
  EXPECT_EQ(b.g.inputs(add)[0], b.g.inputs(add)[1]);
  test::expect_bitwise(b.run(), before);
}

TEST(CommonSubexpressions, NeverMergesRandomDraws) {
  Builder b;
  const Attrs a = Attrs::of(std::vector<int64_t>{8}, int64_t{0}, 0.0, 1.0, DType::kFloat32);
  ValueId u1 = b.node(OpId::k_random_uniform, {}, a);
  ValueId u2 = b.node(OpId::k_random_uniform, {}, a);
  b.outputs({u1, u2});
  EXPECT_EQ(eliminate_common_subexpressions(b.g).nodes_removed, 0);
  EXPECT_EQ(b.count(OpId::k_random_uniform), 2);
}

TEST(CommonSubexpressions, NeverMergesAcrossAnInPlaceWrite) {
  // a = w * 2; w <- x; c = w * 2: same op, attrs and input ids, different values of w.
  Builder b;
  Tensor w = full({3}, 1.0);
  ValueId wv = b.captured(w, "w");
  ValueId x = b.input(full({3}, 5.0));
  ValueId two = b.constant(full({}, 2.0));
  ValueId a = b.node(OpId::k_mul, {wv, two});
  b.node_n(OpId::k_assign, {wv, x});
  ValueId c = b.node(OpId::k_mul, {wv, two});
  b.outputs({a, c});
  EXPECT_EQ(eliminate_common_subexpressions(b.g).nodes_removed, 0);
  auto out = b.run();
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{2, 2, 2}));
  EXPECT_EQ(out[1].to_vector<float>(), (std::vector<float>{10, 10, 10}));
}

TEST(CommonSubexpressions, DeterministicCreationOpsMerge) {
  Builder b;
  ValueId f1 = b.node(OpId::k_fill, {}, test::fill_attrs({4}, 3.0));
  ValueId f2 = b.node(OpId::k_fill, {}, test::fill_attrs({4}, 3.0));
  ValueId f3 = b.node(OpId::k_fill, {}, test::fill_attrs({4}, 4.0));
  b.outputs({f1, f2, f3});
  EXPECT_EQ(eliminate_common_subexpressions(b.g).nodes_removed, 1);
  EXPECT_EQ(b.g.graph_outputs()[0], b.g.graph_outputs()[1]);
  EXPECT_NE(b.g.graph_outputs()[0], b.g.graph_outputs()[2]);
}

}  // namespace
}  // namespace spore::graph
