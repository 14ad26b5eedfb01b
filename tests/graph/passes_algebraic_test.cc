// Algebraic simplification (src/graph/passes/algebraic.cc).
#include <gtest/gtest.h>

#include "graph_eval.h"
#include "test_util.h"

namespace spore::graph {
namespace {
using test::Builder;

Tensor sample(Shape s, DType t = DType::kFloat32, uint32_t seed = 1) {
  return spore::test::make_tensor(spore::test::random_values(s.numel(), t, -3, 3, seed), s, t);
}

TEST(Algebraic, DropsMultiplicativeAndAdditiveIdentities) {
  Builder b;
  ValueId x = b.input(sample({2, 3}));
  ValueId one = b.constant(full({}, 1.0));
  ValueId zero =
      b.node(OpId::k_fill, {}, test::fill_attrs({3}, 0.0));  // broadcasts, same result shape
  ValueId a = b.node(OpId::k_mul, {x, one});
  ValueId c = b.node(OpId::k_mul, {one, a});
  ValueId d = b.node(OpId::k_add, {c, zero});
  ValueId e = b.node(OpId::k_add, {zero, d});
  ValueId f = b.node(OpId::k_sub, {e, zero});
  ValueId y = b.node(OpId::k_div, {f, one});
  b.outputs({y});
  const auto before = b.run();
  PassStats s = simplify_algebra(b.g);
  b.g.validate();
  EXPECT_EQ(s.nodes_removed, 6);
  EXPECT_EQ(b.g.graph_outputs()[0], x);
  test::expect_bitwise(b.run(), before);
}

TEST(Algebraic, KeepsIdentitiesThatBroadcastOrPromote) {
  Builder b;
  ValueId x = b.input(sample({3}));
  ValueId ones_2x3 = b.constant(full({2, 3}, 1.0));
  ValueId widened = b.node(OpId::k_mul, {x, ones_2x3});  // [3] * [2, 3] -> [2, 3]
  ValueId xi = b.input(sample({3}, DType::kInt32));
  ValueId one_f = b.constant(full({}, 1.0));
  ValueId promoted = b.node(OpId::k_mul, {xi, one_f});  // int32 * float32 -> float32
  ValueId not_one = b.node(
      OpId::k_mul, {x, b.constant(spore::test::make_tensor({1, 1, 2}, {3}, DType::kFloat32))});
  ValueId zero_minus = b.node(OpId::k_sub, {b.constant(full({}, 0.0)), x});  // 0 - x is not x
  b.outputs({widened, promoted, not_one, zero_minus});
  EXPECT_EQ(simplify_algebra(b.g).nodes_removed, 0);
  EXPECT_EQ(b.g.num_nodes(), 4u);
}

TEST(Algebraic, ReshapeOfReshapeBecomesOneReshape) {
  Builder b;
  ValueId x = b.input(sample({2, 3, 4}));
  ValueId r1 = b.node(OpId::k_reshape, {x}, Attrs::of(std::vector<int64_t>{6, 4}));
  ValueId r2 = b.node(OpId::k_reshape, {r1}, Attrs::of(std::vector<int64_t>{24}));
  ValueId r3 = b.node(OpId::k_reshape, {r2}, Attrs::of(std::vector<int64_t>{4, -1}));
  ValueId back =
      b.node(OpId::k_reshape, {r3}, Attrs::of(std::vector<int64_t>{2, 3, 4}));  // x's own shape
  b.outputs({r3, back});
  const auto before = b.run();
  simplify_algebra(b.g);
  eliminate_dead_code(b.g);
  b.g.validate();
  ASSERT_EQ(b.ops(), std::vector<OpId>{OpId::k_reshape});
  EXPECT_EQ(b.g.inputs(0)[0], x);
  EXPECT_EQ(b.g.graph_outputs()[1], x);
  test::expect_bitwise(b.run(), before);
}

TEST(Algebraic, PermutePairsCancelOrCompose) {
  Builder b;
  ValueId x = b.input(sample({2, 3, 4}));
  ValueId p1 = b.node(OpId::k_permute, {x}, Attrs::of(std::vector<int64_t>{1, 0, 2}));
  ValueId back =
      b.node(OpId::k_permute, {p1}, Attrs::of(std::vector<int64_t>{1, 0, 2}));  // cancels
  ValueId q1 = b.node(OpId::k_permute, {x}, Attrs::of(std::vector<int64_t>{1, 2, 0}));
  ValueId q2 =
      b.node(OpId::k_permute, {q1}, Attrs::of(std::vector<int64_t>{-2, -1, 0}));  // [1, 2, 0] again
  ValueId sum = b.node(OpId::k_add, {q2, q2});
  b.outputs({back, sum});
  const auto before = b.run();
  simplify_algebra(b.g);
  eliminate_dead_code(b.g);
  b.g.validate();
  EXPECT_EQ(b.g.graph_outputs()[0], x);
  ASSERT_EQ(b.ops(), (std::vector<OpId>{OpId::k_permute, OpId::k_add}));
  EXPECT_EQ(b.g.inputs(0)[0], x);
  // Axis k of q2 is axis [1, 2, 0][[1, 2, 0][k]] of x = [2, 0, 1][k].
  EXPECT_EQ(b.g.node(0).attrs.ints(0), (std::vector<int64_t>{2, 0, 1}));
  EXPECT_EQ(b.g.value(b.g.outputs(0)[0]).meta.shape, (Shape{4, 2, 3}));
  test::expect_bitwise(b.run(), before);
}

TEST(Algebraic, CastToOwnDtypeAndDoubleNegation) {
  Builder b;
  ValueId x = b.input(sample({5}, DType::kBFloat16));
  ValueId c = b.node(OpId::k_cast, {x}, Attrs::of(DType::kBFloat16));
  ValueId n1 = b.node(OpId::k_neg, {c});
  ValueId n2 = b.node(OpId::k_neg, {n1});
  ValueId widened = b.node(OpId::k_cast, {n2}, Attrs::of(DType::kFloat32));  // a real cast stays
  b.outputs({widened});
  const auto before = b.run();
  simplify_algebra(b.g);
  eliminate_dead_code(b.g);
  b.g.validate();
  ASSERT_EQ(b.ops(), std::vector<OpId>{OpId::k_cast});
  EXPECT_EQ(b.g.inputs(0)[0], x);
  test::expect_bitwise(b.run(), before);
}

TEST(Algebraic, NeverForwardsAValueThatIsWrittenInPlace) {
  // y = w * 1 is a copy taken before w is overwritten; replacing y by w would read the new w.
  Builder b;
  Tensor w = full({3}, 2.0);
  ValueId wv = b.captured(w, "w");
  ValueId x = b.input(full({3}, 9.0));
  ValueId y = b.node(OpId::k_mul, {wv, b.constant(full({}, 1.0))});
  b.node_n(OpId::k_assign, {wv, x});
  ValueId z = b.node(OpId::k_add, {y, x});
  b.outputs({z});
  EXPECT_EQ(simplify_algebra(b.g).nodes_removed, 0);
  w.copy_(full({3}, 2.0));
  EXPECT_EQ(b.run()[0].to_vector<float>(), (std::vector<float>{11, 11, 11}));
}

}  // namespace
}  // namespace spore::graph
