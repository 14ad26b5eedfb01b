// The pass pipeline (src/graph/passes/pipeline.cc) on a small training-step-like graph: what it
// leaves, its statistics, and results (outputs and in-place updates) bitwise equal to the
// unoptimised graph's.
#include <gtest/gtest.h>

#include <cstdlib>

#include "graph_eval.h"
#include "test_util.h"

namespace spore::graph {
namespace {
using test::Builder;

Tensor sample(Shape s, uint32_t seed) {
  return spore::test::make_tensor(
      spore::test::random_values(s.numel(), DType::kFloat32, -1, 1, seed), s, DType::kFloat32);
}

struct Step {
  Builder b;
  Tensor w = sample({32, 16}, 2), bias = sample({16}, 3), buf = zeros({16});
  Tensor bias0 = bias.clone();
};

void build(Step& s) {
  Builder& b = s.b;
  ValueId x = b.input(sample({64, 32}, 1), "x");
  ValueId gb = b.input(sample({16}, 4), "grad_b");
  ValueId w = b.captured(s.w, "w"), bias = b.captured(s.bias, "b"), buf = b.captured(s.buf, "buf");
  ValueId one = b.node(OpId::k_fill, {}, test::fill_attrs({}, 1.0));
  ValueId h = b.node(OpId::k_mul, {b.node(OpId::k_matmul, {x, w}), one});  // x @ w * 1
  ValueId z = b.node(OpId::k_add, {h, bias});
  ValueId a1 = b.node(OpId::k_gelu, {z});
  ValueId a2 = b.node(OpId::k_gelu, {z});  // the same expression twice
  ValueId t = b.node(OpId::k_tanh, {b.node(OpId::k_add, {a1, a2})});
  b.node(OpId::k_exp, {x});  // dead
  ValueId five = b.node(OpId::k_add, {b.node(OpId::k_fill, {}, test::fill_attrs({16}, 2.0)),
                                      b.node(OpId::k_fill, {}, test::fill_attrs({16}, 3.0))});
  ValueId out = b.node(OpId::k_mul, {t, five});
  ValueId scaled = b.node(OpId::k_mul, {gb, five});
  b.node_n(OpId::k_sgd_update, {bias, scaled, buf}, Attrs::of(0.1, 0.9, 0.0, 0.0, false, true));
  b.outputs({out});
}

TEST(PassPipeline, OptimisesAStepAndKeepsItsResults) {
  Step s;
  build(s);
  const std::vector<Tensor> want = s.b.run();
  const Tensor bias_after = s.bias.clone(), buf_after = s.buf.clone();

  Graph g = s.b.g;
  PassOptions options;
  options.validate = true;
  options.min_fusion_elements = 0;  // the step's tensors are small: fuse them anyway
  std::vector<PassStats> stats = run_passes(g, options);
  ASSERT_EQ(stats.size(), 6u);
  const char* order[] = {"simplify", "fold", "cse", "dce", "fuse", "dce"};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(stats[i].pass, order[i]);
  EXPECT_EQ(stats[0].nodes_removed, 1);  // * 1
  EXPECT_EQ(stats[1].nodes_removed, 4);  // the fills of 1, 2, 3 and their sum
  EXPECT_EQ(stats[2].nodes_removed, 1);  // the second gelu
  EXPECT_EQ(stats[3].nodes_removed, 1);  // exp
  EXPECT_EQ(stats[4].ops_fused, 5);      // add bias, gelu, add, tanh, * 5
  // What is left: matmul, one fused node, the gradient's scaling, the update.
  std::vector<OpId> ops;
  for (const Node& n : g.nodes()) ops.push_back(n.op());
  EXPECT_EQ(ops, (std::vector<OpId>{OpId::k_matmul, OpId::k_fused_elementwise, OpId::k_mul,
                                    OpId::k_sgd_update}));

  s.bias.copy_(s.bias0);
  s.buf.copy_(zeros({16}));
  test::expect_bitwise(s.b.run(g), want);
  test::expect_bitwise({s.bias, s.buf}, {bias_after, buf_after});
}

TEST(PassPipeline, OptionsTurnPassesOff) {
  Step s;
  build(s);
  Graph g = s.b.g;
  PassOptions off;
  off.fuse = false;
  off.cse = false;
  std::vector<PassStats> stats = run_passes(g, off);
  ASSERT_EQ(stats.size(), 3u);  // simplify, fold, dce
  int gelus = 0;
  for (const Node& n : g.nodes()) gelus += n.op() == OpId::k_gelu;
  EXPECT_EQ(gelus, 2);
}

// Below the size threshold the pipeline leaves elementwise ops alone: fusing tiny tensors costs
// more in the fused kernel's set-up than it saves (NOTE [Elementwise fusion]).
TEST(PassPipeline, TinyTensorsStayUnfusedByDefault) {
  Step s;
  build(s);
  Graph g = s.b.g;
  std::vector<PassStats> stats = run_passes(g);
  EXPECT_EQ(stats[4].pass, "fuse");
  EXPECT_EQ(stats[4].ops_fused, 0);
  for (const Node& n : g.nodes()) EXPECT_NE(n.op(), OpId::k_fused_elementwise);
}

TEST(PassPipeline, VerbosePrintsEachPass) {
  Step s;
  build(s);
  Graph g = s.b.g;
  ::setenv("SPORE_GRAPH_VERBOSE", "1", 1);
  ::testing::internal::CaptureStderr();
  PassOptions small;
  small.min_fusion_elements = 0;
  run_passes(g, small);
  const std::string err = ::testing::internal::GetCapturedStderr();
  ::unsetenv("SPORE_GRAPH_VERBOSE");
  EXPECT_NE(err.find("[graph] simplify"), std::string::npos) << err;
  EXPECT_NE(err.find("[graph] fuse     nodes 8 -> 4 (removed 4), fused 5 ops"), std::string::npos)
      << err;
}

// NOTE [Sealed constants]: with seal_constants, every constant no node writes is read-only after
// the pipeline, a folded result included; a constant that a node writes, and every view of its
// storage, stays writable; without the option nothing is sealed.
TEST(Pipeline, SealingLeavesWrittenConstantsWritable) {
  for (bool seal : {false, true}) {
    SCOPED_TRACE(seal ? "sealed" : "not sealed");
    Builder b;
    const Tensor w = sample({4, 4}, 7), state = sample({2, 4}, 8), other = sample({4}, 9);
    const ValueId x = b.input(sample({3, 4}, 6), "x");
    const ValueId wv = b.constant(w, "w"), sv = b.constant(state, "state");
    const ValueId row = b.constant(reshape(slice(state, 0, 1, 2), {4}), "state_row");  // a view of state's storage
    const ValueId folded = b.node(OpId::k_add, {b.constant(other, "other"), b.constant(Tensor::scalar(1.0f))});
    const ValueId y = b.node(OpId::k_add, {b.node(OpId::k_matmul, {x, wv}), folded});
    b.node_n(OpId::k_assign, {sv, b.node(OpId::k_add, {sv, sv})});  // no outputs: node_n, not node
    b.outputs({y, b.node(OpId::k_mul, {y, row})});
    PassOptions o;
    o.seal_constants = seal;
    run_passes(b.g, o);
    EXPECT_EQ(!w.storage()->writable(), seal);
    EXPECT_TRUE(state.storage()->writable());
    int sealed_folded = 0;
    for (ValueId v = 0; v < b.g.num_values(); ++v) {
      const Value& val = b.g.value(v);
      if (val.kind != ValueKind::kConstant || !val.tensor.defined()) continue;
      if (val.tensor.same_storage(state)) EXPECT_TRUE(val.tensor.storage()->writable()) << val.name;
      else EXPECT_EQ(!val.tensor.storage()->writable(), seal) << "constant " << v << " " << val.name;
      sealed_folded += val.tensor.numel() == 4 && !val.tensor.same_storage(other) && !val.tensor.same_storage(state);
    }
    EXPECT_EQ(sealed_folded, 1) << "other + 1 folded into one constant";
  }
}

}  // namespace
}  // namespace spore::graph
