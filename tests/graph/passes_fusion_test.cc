// Elementwise fusion (src/graph/passes/elementwise_fusion.cc) and the fused_elementwise op
// (src/ops/fused.cc, src/backends/cpu/fused_kernels.cc): the graph the pass makes, and results
// bitwise equal to the unfused ops' at every SIMD level this CPU has.
#include <gtest/gtest.h>

#include "backends/cpu/cpu_features.h"
#include "graph_eval.h"
#include "spore/autograd.h"
#include "test_util.h"

namespace spore::graph {
namespace {
using cpu::SimdLevel;
using test::Builder;

Tensor sample(Shape s, DType t = DType::kFloat32, uint32_t seed = 1, double lo = -3,
              double hi = 3) {
  return spore::test::make_tensor(spore::test::random_values(s.numel(), t, lo, hi, seed), s, t);
}

// Runs `check` at each SIMD level up to the best this CPU has, restoring the level after.
template <class F>
void at_every_level(F&& check) {
  const SimdLevel saved = cpu::simd_level();
  for (SimdLevel level : {SimdLevel::kGeneric, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
    if (level > cpu::best_simd_level()) continue;
    cpu::set_simd_level(level);
    SCOPED_TRACE(cpu::simd_level_name(level));
    check();
  }
  cpu::set_simd_level(saved);
}

// Fuses a copy of b's graph and checks it computes the unfused graph's results bitwise, at every
// level; returns the fused graph.
Graph fuse_and_compare(const Builder& b) {
  Graph fused = b.g;
  fuse_elementwise(fused);
  eliminate_dead_code(fused);
  fused.validate();
  at_every_level([&] { test::expect_bitwise(b.run(fused), b.run()); });
  return fused;
}

int count(const Graph& g, OpId op) {
  int c = 0;
  for (const Node& n : g.nodes()) c += n.op() == op;
  return c;
}

TEST(Fusion, GeluOfAffineIsOneNodeWithBroadcastBias) {
  // gelu(x * w + b), x and w [37, 1000] (over the thread pool's grain, odd tails), b a row.
  Builder b;
  ValueId x = b.input(sample({37, 1000}, DType::kFloat32, 1));
  ValueId w = b.captured(sample({37, 1000}, DType::kFloat32, 2), "w");
  ValueId bias = b.captured(sample({1000}, DType::kFloat32, 3), "b");
  ValueId y = b.node(OpId::k_gelu, {b.node(OpId::k_add, {b.node(OpId::k_mul, {x, w}), bias})});
  b.outputs({y});
  Graph g = b.g;
  PassStats s = fuse_elementwise(g);
  g.validate();
  ASSERT_EQ(g.num_nodes(), 1u);
  EXPECT_EQ(g.node(0).op(), OpId::k_fused_elementwise);
  EXPECT_EQ(g.node(0).attrs.s(0), "mul %0 %1; add $0 %2; gelu $1");
  EXPECT_EQ(std::vector<ValueId>(g.inputs(0).begin(), g.inputs(0).end()),
            (std::vector<ValueId>{x, w, bias}));
  EXPECT_EQ(s.ops_fused, 3);
  EXPECT_EQ(s.bytes_saved, 2 * 37 * 1000 * 4);  // the two intermediates
  EXPECT_EQ(g.graph_outputs()[0], g.outputs(0)[0]);
  at_every_level([&] { test::expect_bitwise(b.run(g), b.run()); });
}

TEST(Fusion, MultiUseIntermediatesStayMaterialised) {
  // a = x*y is a graph output and read twice (exp and add): it is materialised once and is an
  // input of the group {exp, add, tanh}. A diamond read only inside a group joins it instead
  // (GeneralBroadcastingAndScalarOperands).
  Builder b;
  ValueId x = b.input(sample({3000}, DType::kFloat32, 4));
  ValueId y = b.input(sample({3000}, DType::kFloat32, 5));
  ValueId a = b.node(OpId::k_mul, {x, y});
  ValueId e = b.node(OpId::k_exp, {a});
  ValueId s = b.node(OpId::k_add, {a, e});
  ValueId t = b.node(OpId::k_tanh, {s});
  ValueId u = b.node(OpId::k_sigmoid, {x});  // a graph output read by another node too
  ValueId v = b.node(OpId::k_silu, {u});
  b.outputs({t, u, v, a});
  Graph g = fuse_and_compare(b);
  EXPECT_EQ(count(g, OpId::k_mul), 1);
  EXPECT_EQ(count(g, OpId::k_sigmoid), 1);
  EXPECT_EQ(count(g, OpId::k_fused_elementwise), 1);  // exp, add, tanh; silu alone is not a group
  EXPECT_EQ(count(g, OpId::k_silu), 1);
  for (const Node& n : g.nodes()) {
    if (n.op() == OpId::k_fused_elementwise) {
      EXPECT_EQ(n.attrs.s(0), "exp %0; add %0 $0; tanh $1");
    }
  }
}

TEST(Fusion, GeneralBroadcastingAndScalarOperands) {
  // [4, 1, 5] against [3, 1] against a scalar: both tensor operands are gathered per block; m is
  // read twice, both times inside the group.
  Builder b;
  ValueId x = b.input(sample({4, 1, 5}, DType::kFloat32, 6));
  ValueId y = b.input(sample({3, 1}, DType::kFloat32, 7));
  ValueId half = b.constant(full({}, 0.5));
  ValueId m = b.node(OpId::k_maximum, {b.node(OpId::k_sub, {x, y}), half});
  ValueId z = b.node(OpId::k_sqrt, {b.node(OpId::k_mul, {m, m})});
  b.outputs({z});
  Graph g = fuse_and_compare(b);
  ASSERT_EQ(g.num_nodes(), 1u);
  EXPECT_EQ(g.node(0).attrs.s(0), "sub %0 %1; maximum $0 %2; mul $1 $1; sqrt $2");
  EXPECT_EQ(g.value(g.graph_outputs()[0]).meta.shape, (Shape{4, 3, 5}));
}

TEST(Fusion, ComparisonsWhereAndCastsAcrossDtypes) {
  Builder b;
  ValueId x = b.input(sample({2049}, DType::kFloat16, 8));
  ValueId y = b.input(sample({2049}, DType::kFloat16, 9));
  ValueId bigger = b.node(OpId::k_gt, {x, y});
  ValueId picked = b.node(OpId::k_where, {bigger, x, y});
  ValueId wide = b.node(OpId::k_cast, {picked}, Attrs::of(DType::kFloat32));
  ValueId r = b.node(OpId::k_relu6, {b.node(OpId::k_mul, {wide, wide})});
  ValueId flag = b.node(OpId::k_logical_not,
                        {b.node(OpId::k_logical_and, {b.node(OpId::k_lt, {x, y}),
                                                      b.input(sample({2049}, DType::kBool, 10))})});
  b.outputs({r, flag});
  Graph g = fuse_and_compare(b);
  EXPECT_EQ(count(g, OpId::k_fused_elementwise), 2);
  EXPECT_EQ(g.num_nodes(), 2u);
}

TEST(Fusion, EveryDtypeFamilyIsBitwise) {
  for (DType t : {DType::kFloat64, DType::kBFloat16, DType::kInt32, DType::kInt64, DType::kUInt8}) {
    SCOPED_TRACE(dtype_name(t));
    Builder b;
    ValueId x = b.input(sample({70000}, t, 11, 0, 5));  // over the grain: threaded blocks
    ValueId y = b.input(sample({70000}, t, 12, 0, 5));
    ValueId v = b.node(
        OpId::k_abs,
        {b.node(OpId::k_minimum, {b.node(OpId::k_add, {x, y}), b.node(OpId::k_mul, {x, y})})});
    b.outputs({v});
    Graph g = fuse_and_compare(b);
    EXPECT_EQ(g.num_nodes(), 1u);
  }
}

TEST(Fusion, PromotingOpsAreNotFused) {
  // int32 + float32 promotes (a cast before the kernel): the fused kernel does not do that.
  Builder b;
  ValueId xi = b.input(sample({8}, DType::kInt32));
  ValueId y = b.input(sample({8}));
  ValueId s = b.node(OpId::k_add, {xi, y});
  ValueId e = b.node(OpId::k_exp, {xi});  // int -> float32 compute: promotes too
  ValueId z = b.node(OpId::k_mul, {s, e});
  b.outputs({z});
  Graph g = fuse_and_compare(b);
  EXPECT_EQ(count(g, OpId::k_fused_elementwise), 0);
  EXPECT_EQ(g.num_nodes(), 3u);
}

TEST(Fusion, NeverMovesAReadPastAnInPlaceWrite) {
  // a = w * x; w <- z; out = exp(a): fusing a into exp's group would read the new w.
  Builder b;
  Tensor w = full({16}, 2.0);
  ValueId wv = b.captured(w, "w");
  ValueId x = b.input(full({16}, 3.0));
  ValueId z = b.input(full({16}, -1.0));
  ValueId a = b.node(OpId::k_mul, {wv, x});
  b.node_n(OpId::k_assign, {wv, z});
  ValueId out = b.node(OpId::k_neg, {b.node(OpId::k_exp, {a})});
  b.outputs({out});
  Graph g = b.g;
  fuse_elementwise(g);
  g.validate();
  ASSERT_EQ(count(g, OpId::k_fused_elementwise), 1);
  EXPECT_EQ(count(g, OpId::k_mul), 1);  // a stays before the write
  w.copy_(full({16}, 2.0));
  std::vector<Tensor> got = b.run(g);
  for (float v : got[0].to_vector<float>()) EXPECT_FLOAT_EQ(v, -std::exp(6.0f));
}

TEST(Fusion, ProgramsAreCheckedWhenDispatched) {
  Tensor x = full({2}, 1.0), i = full({2}, 1.0, DType::kInt32);
  auto run = [](std::vector<Tensor> in, const char* program) {
    return dispatch1(OpId::k_fused_elementwise, in, Attrs::of(std::string(program)));
  };
  spore::test::expect_error([&] { run({x}, "matmul %0 %0"); }, ErrorCode::kValue,
                            "not an op fused_elementwise runs");
  spore::test::expect_error([&] { run({x}, "exp $0"); }, ErrorCode::kValue,
                            "not an earlier instruction");
  spore::test::expect_error([&] { run({x}, "add %0"); }, ErrorCode::kValue, "takes 2 operands");
  spore::test::expect_error(
      [&] {
        run({x, i}, "add %0 %1");
      },
      ErrorCode::kDType, "without a promotion");
  spore::test::expect_error(
      [&] {
        run({x, x}, "exp %0");
      },
      ErrorCode::kValue, "every input must be read");
  spore::test::expect_error([&] { run({x}, "cast:float99 %0"); }, ErrorCode::kValue,
                            "unknown dtype");
  spore::test::expect_error([&] { run({x}, " ; "); }, ErrorCode::kValue, "no instructions");
  // A well-formed program equals the ops it names: (x + 2) * x with x = [1, 1].
  EXPECT_EQ(run({x, full({}, 2.0)}, "add %0 %1; mul $0 %0").to_vector<float>(),
            (std::vector<float>{3, 3}));
}

TEST(Fusion, StridedViewInputsAreGathered) {
  // A transposed view (same element count as the output, not contiguous) and a column
  // broadcast, through dispatch directly; 300 x 200 spans several blocks and a partial one.
  Tensor xt = permute(sample({200, 300}, DType::kFloat32, 16), {1, 0});
  Tensor y = sample({300, 200}, DType::kFloat32, 17);
  Tensor col = sample({300, 1}, DType::kFloat32, 18);
  const Attrs program = Attrs::of(std::string("add %0 %1; mul $0 %2; tanh $1"));
  at_every_level([&] {
    std::vector<Tensor> args{xt, y, col};
    Tensor got = dispatch1(OpId::k_fused_elementwise, args, program);
    test::expect_bitwise({got}, {tanh((xt + y) * col)});
  });
}

TEST(Fusion, GradientsOfAFusedNodeAreTheUnfusedOnes) {
  // d/dx, d/dw, d/db of sum(gelu(x * w + b)) with b a broadcast row, fused against unfused; the
  // rule replays the ops' own rules, so the gradients agree to the last bit.
  Tensor x = sample({4, 5}, DType::kFloat32, 13), w = sample({4, 5}, DType::kFloat32, 14);
  Tensor bias = sample({5}, DType::kFloat32, 15);
  const Attrs program = Attrs::of(std::string("mul %0 %1; add $0 %2; gelu $1"));
  auto fused = value_and_grad(
      [&](const std::vector<Tensor>& in) {
        std::vector<Tensor> args{in[0], in[1], in[2]};
        return sum(dispatch1(OpId::k_fused_elementwise, args, program));
      },
      {0, 1, 2});
  auto unfused = value_and_grad(
      [](const std::vector<Tensor>& in) { return sum(gelu(in[0] * in[1] + in[2])); }, {0, 1, 2});
  ValueAndGrad got = fused({x, w, bias}), want = unfused({x, w, bias});
  test::expect_bitwise({got.value}, {want.value});
  test::expect_bitwise(got.input_grads, want.input_grads);
  EXPECT_EQ(got.input_grads[2].shape(), (Shape{5}));
}

}  // namespace
}  // namespace spore::graph
