// Constant folding (src/graph/passes/constant_folding.cc).
#include <gtest/gtest.h>

#include "graph_eval.h"
#include "test_util.h"

namespace spore::graph {
namespace {
using test::Builder;

TEST(ConstantFolding, FoldsConstantSubtreesIntoValues) {
  // y = x * (c + fill(2)) with c = [1, 2, 3]: the sum is folded to [3, 4, 5] (by hand).
  Builder b;
  ValueId x = b.input(spore::test::make_tensor({1, 10, 100}, {3}, DType::kFloat32));
  ValueId c = b.constant(spore::test::make_tensor({1, 2, 3}, {3}, DType::kFloat32));
  ValueId two = b.node(OpId::k_fill, {}, test::fill_attrs({3}, 2.0));
  ValueId sum = b.node(OpId::k_add, {c, two});
  ValueId y = b.node(OpId::k_mul, {x, sum});
  b.outputs({y});
  const auto before = b.run();
  PassStats s = fold_constants(b.g);
  b.g.validate();
  EXPECT_EQ(s.nodes_removed, 2);
  ASSERT_EQ(b.ops(), std::vector<OpId>{OpId::k_mul});
  const Value& folded = b.g.value(b.g.inputs(0)[1]);
  ASSERT_EQ(folded.kind, ValueKind::kConstant);
  EXPECT_EQ(folded.tensor.to_vector<float>(), (std::vector<float>{3, 4, 5}));
  test::expect_bitwise(b.run(), before);
  EXPECT_EQ(b.run()[0].to_vector<float>(), (std::vector<float>{3, 40, 500}));
}

TEST(ConstantFolding, CapturedTensorsAreNotConstants) {
  // Parameters are bound by reference and updated between calls: w + 1 must be recomputed.
  Builder b;
  Tensor w = full({2}, 1.0);
  ValueId wv = b.captured(w, "w");
  ValueId one = b.constant(full({}, 1.0));
  ValueId y = b.node(OpId::k_add, {wv, one});
  b.outputs({y});
  EXPECT_EQ(fold_constants(b.g).nodes_removed, 0);
  EXPECT_EQ(b.run()[0].to_vector<float>(), (std::vector<float>{2, 2}));
  w.copy_(full({2}, 5.0));  // an optimizer step between calls
  EXPECT_EQ(b.run()[0].to_vector<float>(), (std::vector<float>{6, 6}));
}

TEST(ConstantFolding, NeverFoldsRandomOps) {
  Builder b;
  ValueId u = b.node(OpId::k_random_normal, {},
                     Attrs::of(std::vector<int64_t>{4}, int64_t{0}, 0.0, 1.0, DType::kFloat32));
  ValueId y = b.node(OpId::k_mul, {u, b.constant(full({}, 2.0))});
  b.outputs({y});
  EXPECT_EQ(fold_constants(b.g).nodes_removed, 0);
  EXPECT_EQ(b.count(OpId::k_random_normal), 1);
}

TEST(ConstantFolding, BoundsTheSizeOfFoldedResults) {
  Builder b;
  ValueId small = b.node(OpId::k_fill, {}, test::fill_attrs({256, 256}, 1.0));   // 256 KiB
  ValueId large = b.node(OpId::k_fill, {}, test::fill_attrs({1024, 512}, 1.0));  // 2 MiB
  b.outputs({small, large});
  EXPECT_EQ(fold_constants(b.g).nodes_removed, 1);
  ASSERT_EQ(b.g.num_nodes(), 1u);
  EXPECT_EQ(b.g.value(b.g.outputs(0)[0]).meta.shape, (Shape{1024, 512}));
  EXPECT_EQ(b.g.value(b.g.graph_outputs()[0]).kind, ValueKind::kConstant);
}

TEST(ConstantFolding, LeavesConstantsThatAreWrittenInPlace) {
  Builder b;
  ValueId c = b.constant(full({2}, 1.0));
  ValueId x = b.input(full({2}, 7.0));
  ValueId before_write = b.node(OpId::k_neg, {c});
  b.node_n(OpId::k_assign, {c, x});
  b.outputs({before_write});
  EXPECT_EQ(fold_constants(b.g).nodes_removed, 0);
}

TEST(ConstantFolding, ViewsOfConstantsBecomeOwnedValues) {
  Builder b;
  ValueId c = b.constant(spore::test::make_tensor({1, 2, 3, 4, 5, 6}, {2, 3}, DType::kFloat32));
  ValueId t = b.node(OpId::k_permute, {c}, Attrs::of(std::vector<int64_t>{1, 0}));
  b.outputs({t});
  const auto before = b.run();
  fold_constants(b.g);
  EXPECT_EQ(b.g.num_nodes(), 0u);
  const Value& v = b.g.value(b.g.graph_outputs()[0]);
  EXPECT_TRUE(v.tensor.is_contiguous());
  EXPECT_EQ(v.tensor.to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  test::expect_bitwise(b.run(), before);
}

}  // namespace
}  // namespace spore::graph
