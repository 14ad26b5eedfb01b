// jit: tracing, the signature cache, the executor and its memory plan, against eager runs of the
// same functions (NOTE [Tracing], [Graph executor], [Memory planning], [jit cache]).
#include "spore/jit.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "graph/passes/memory_plan.h"
#include "spore/autograd.h"
#include "spore/context.h"
#include "spore/nn/dense.h"
#include "spore/nn/losses.h"
#include "spore/ops.h"
#include "spore/optim.h"
#include "test_util.h"

namespace spore {
namespace {
using spore::test::expect_error;

std::vector<uint8_t> bytes(const Tensor& t) { return t.contiguous().to_bytes(); }

Tensor fma_relu(const std::vector<Tensor>& in) { return relu(add(mul(in[0], in[1]), in[2])); }

TEST(Jit, CompiledRunEqualsEagerBitwiseAndCountsHits) {
  Tensor a = random_normal({3, 5}, 1), b = random_normal({3, 5}, 2), c = random_normal({5}, 3);
  Tensor eager = fma_relu({a, b, c});
  JitFunction f = jit(TensorFn(fma_relu));
  Tensor first = f.call1({a, b, c});  // traced: the eager run's own result
  Tensor second = f.call1({a, b, c});
  Tensor third = f.call1({a, b, c});
  EXPECT_EQ(bytes(first), bytes(eager));
  EXPECT_EQ(bytes(second), bytes(eager));
  EXPECT_EQ(bytes(third), bytes(eager));
  EXPECT_EQ(f.stats().misses, 1);
  EXPECT_EQ(f.stats().hits, 2);
  ASSERT_NE(f.last_graph(), nullptr);
  EXPECT_EQ(f.last_graph()->graph_inputs().size(), 3u);
  // Results are fresh tensors: the next run does not write over what the caller holds.
  EXPECT_NE(second.storage(), third.storage());
}

TEST(Jit, NewSignatureRetracesAndTheCacheIsBoundedLru) {
  JitOptions o;
  o.cache_size = 2;
  JitFunction f = jit(TensorFn(fma_relu), o);
  auto call = [&](int64_t n) {
    Tensor a = random_normal({n}, 1), b = random_normal({n}, 2), c = random_normal({n}, 3);
    Tensor got = f.call1({a, b, c});
    EXPECT_EQ(bytes(got), bytes(fma_relu({a, b, c}))) << n;
  };
  call(4);  // miss
  call(4);  // hit
  call(6);  // miss
  call(8);  // miss, evicts 4 (least recently used)
  call(6);  // hit
  call(4);  // miss again
  EXPECT_EQ(f.stats().misses, 4);
  EXPECT_EQ(f.stats().hits, 2);
  EXPECT_EQ(f.stats().evictions, 2);
}

TEST(Jit, WithoutRetracingAWrongSignatureNamesBoth) {
  JitOptions o;
  o.retrace = false;
  o.name = "scaled";
  JitFunction f = jit(TensorFn(fma_relu), o);
  Tensor x = ones({2, 3});
  f({x, x, x});
  Tensor y = ones({4}, DType::kFloat64);
  expect_error([&] { f({y, y, y}); }, ErrorCode::kValue, "scaled", "float32[2, 3] cpu", "float64[4] cpu", "retrace");
  expect_error([&] { f({x, x}); }, ErrorCode::kValue, "compiled for");
}

TEST(Jit, OneTensorPassedTwiceIsItsOwnSignature) {
  JitFunction f = jit(TensorFn(fma_relu));
  Tensor a = random_normal({4}, 1), b = random_normal({4}, 2), c = random_normal({4}, 3);
  EXPECT_EQ(bytes(f.call1({a, a, c})), bytes(fma_relu({a, a, c})));
  EXPECT_EQ(bytes(f.call1({a, b, c})), bytes(fma_relu({a, b, c})));  // not the aliased graph
  EXPECT_EQ(bytes(f.call1({b, b, c})), bytes(fma_relu({b, b, c})));
  EXPECT_EQ(f.stats().misses, 2);
  EXPECT_EQ(f.stats().hits, 1);
}

TEST(Jit, StaticArgumentsSelectTheGraph) {
  JitFunction f = jit(TensorsStaticFn([](const std::vector<Tensor>& in, const StaticArgs& s) {
    return std::vector<Tensor>{mul(add(in[0], in[1]), std::get<double>(s[0]))};
  }));
  Tensor a = full({2}, 1.0), b = full({2}, 5.5);
  // The chapter's scaled_add: (1 + 5.5) * 2 = 13.
  EXPECT_EQ(f({a, b}, {AttrValue(2.0)})[0].to_vector<float>(), (std::vector<float>{13, 13}));
  EXPECT_EQ(f({a, b}, {AttrValue(2.0)})[0].to_vector<float>(), (std::vector<float>{13, 13}));
  EXPECT_EQ(f({a, b}, {AttrValue(3.0)})[0].to_vector<float>(), (std::vector<float>{19.5f, 19.5f}));
  EXPECT_EQ(f.stats().misses, 2);
  EXPECT_EQ(f.stats().hits, 1);
}

TEST(Jit, HostReadWhileTracingNamesTheOpAndTheWaysOut) {
  JitFunction f = jit(TensorFn([](const std::vector<Tensor>& in) {
    Tensor s = sum(in[0]);
    if (s.item<float>() > 0) return mul(in[0], 2.0);  // a data-dependent branch
    return neg(in[0]);
  }));
  expect_error([&] { f({ones({3})}); }, ErrorCode::kValue, "reads a tensor's value", "'sum'", "spore::cond",
               "eagerly");
  // Nothing is left installed: host reads work again after the failed trace.
  EXPECT_EQ(ones({2}).to_vector<float>(), (std::vector<float>{1, 1}));
}

TEST(Jit, UndefinedResultIsAnError) {
  JitFunction f = jit(TensorsFn([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0], Tensor()}; }));
  expect_error([&] { f({ones({1})}); }, ErrorCode::kValue, "result 1", "undefined");
}

TEST(Jit, CapturedTensorsAreBoundByReference) {
  Tensor w = full({3}, 2.0);
  JitFunction f = jit(TensorFn([w](const std::vector<Tensor>& in) { return mul(in[0], w); }));
  Tensor x = full({3}, 1.5);
  EXPECT_EQ(f.call1({x}).to_vector<float>(), (std::vector<float>{3, 3, 3}));
  w.copy_(full({3}, 4.0));  // an in-place update, as an optimizer's
  EXPECT_EQ(f.call1({x}).to_vector<float>(), (std::vector<float>{6, 6, 6}));
  EXPECT_EQ(f.stats().misses, 1);
  EXPECT_EQ(f.last_graph()->captured().size(), 1u);
}

TEST(Jit, RandomOpsStayNodes) {
  JitFunction f = jit(TensorsFn([](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{add(in[0], random_normal({4}, 7))};
  }));
  Tensor x = zeros({4});
  Tensor a = f({x})[0], b = f({x})[0];
  EXPECT_EQ(bytes(a), bytes(random_normal({4}, 7)));
  EXPECT_EQ(bytes(b), bytes(a));
  bool has_random = false;
  for (const Node& n : f.last_graph()->nodes()) has_random |= n.op() == OpId::k_random_normal;
  EXPECT_TRUE(has_random);
}

TEST(Jit, NestedJitInlinesIntoTheOuterGraph) {
  JitFunction inner = jit(TensorFn(fma_relu));
  JitFunction outer = jit(TensorFn([&](const std::vector<Tensor>& in) { return mul(inner.call1(in), 3.0); }));
  Tensor a = random_normal({4}, 1), b = random_normal({4}, 2), c = random_normal({4}, 3);
  Tensor want = mul(fma_relu({a, b, c}), 3.0);
  EXPECT_EQ(bytes(outer.call1({a, b, c})), bytes(want));
  EXPECT_EQ(bytes(outer.call1({a, b, c})), bytes(want));
  EXPECT_EQ(inner.stats().calls, 0);  // the outer trace ran it eagerly
}

TEST(Jit, DumpsTextAndDotAndWritesThemWhenAsked) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "spore_graph_dumps";
  std::filesystem::remove_all(dir);
  ::setenv("SPORE_DUMP_GRAPHS", dir.c_str(), 1);
  JitOptions o;
  o.name = "fma";
  o.optimize = false;  // the dump of the traced nodes themselves (fusion would make them one)
  JitFunction f = jit(TensorFn(fma_relu), o);
  Tensor x = ones({2, 2}), y = ones({2, 2}), z = ones({2, 2});
  f({x, y, z});
  ::unsetenv("SPORE_DUMP_GRAPHS");
  const std::string text = graph::dump(*f.last_graph());
  EXPECT_NE(text.find("mul(%0, %1) -> %3:float32[2, 2]"), std::string::npos) << text;
  EXPECT_NE(text.find("relu("), std::string::npos) << text;
  EXPECT_NE(text.find("%0 = input float32[2, 2]"), std::string::npos) << text;
  const std::string dot = graph::dump_dot(*f.last_graph());
  EXPECT_EQ(dot.rfind("digraph", 0), 0u);
  EXPECT_NE(dot.find("n0 -> n1"), std::string::npos) << dot;
  for (const char* stage : {"before", "after"})
    for (const char* ext : {".txt", ".dot"})
      EXPECT_TRUE(std::filesystem::exists(dir / (std::string("fma-0-") + stage + ext))) << stage << ext;
}

// A chain of elementwise ops: every intermediate dies at its one reader, so the plan writes each
// over its input and needs far fewer bytes than one buffer per value (unfused: with the passes the
// chain is one fused node, tested below).
TEST(Jit, MemoryPlanReusesBuffersAndWritesInPlace) {
  auto chain = [](const std::vector<Tensor>& in) {
    Tensor x = in[0];
    for (int i = 0; i < 6; ++i) x = relu(add(mul(x, in[1]), in[1]));
    return sum(exp(neg(x)));
  };
  Tensor x = random_normal({64, 32}, 11), y = random_normal({64, 32}, 12);
  JitOptions unfused;
  unfused.optimize = false;
  JitFunction f = jit(TensorFn(chain), unfused);
  Tensor want = chain({x, y});
  f({x, y});
  EXPECT_EQ(bytes(f.call1({x, y})), bytes(want));
  EXPECT_EQ(bytes(f.call1({x, y})), bytes(want));
  const JitStats& s = f.stats();
  EXPECT_TRUE(s.last_passes.empty());  // optimize off: no pass ran
  EXPECT_GT(s.in_place, 10);
  EXPECT_LE(s.planned_peak_bytes, 2 * 64 * 32 * 4);
  EXPECT_GE(s.unplanned_peak_bytes, 2 * 64 * 32 * 4);
}

// With the passes (the default), the same chain compiles to one fused elementwise node feeding
// the reduction, and gives the eager bytes.
TEST(Jit, ThePassesFuseTheChainAndKeepItsBytes) {
  auto chain = [](const std::vector<Tensor>& in) {
    Tensor x = in[0];
    for (int i = 0; i < 6; ++i) x = relu(add(mul(x, in[1]), in[1]));
    return sum(exp(neg(x)));
  };
  // 128x64: above the pipeline's fusion threshold (PassOptions::min_fusion_elements).
  Tensor x = random_normal({128, 64}, 11), y = random_normal({128, 64}, 12);
  JitFunction f = jit(TensorFn(chain));
  Tensor want = chain({x, y});
  f({x, y});
  EXPECT_EQ(bytes(f.call1({x, y})), bytes(want));
  int fused = 0, elementwise = 0;
  for (const Node& n : f.last_graph()->nodes()) {
    fused += n.op() == OpId::k_fused_elementwise;
    elementwise += n.op() == OpId::k_mul || n.op() == OpId::k_add || n.op() == OpId::k_relu;
  }
  EXPECT_EQ(fused, 1) << graph::dump(*f.last_graph());
  EXPECT_EQ(elementwise, 0) << graph::dump(*f.last_graph());
  EXPECT_LT(f.stats().nodes_compiled, f.stats().nodes_traced);
  // The pass statistics say the same: fusion folded the 20 elementwise nodes (6 x mul, add, relu,
  // then neg and exp) into one, the node counts chain from pass to pass, and the last pass ends
  // at the compiled size.
  const std::vector<graph::PassStats>& passes = f.stats().last_passes;
  ASSERT_FALSE(passes.empty());
  int ops_fused = 0;
  int64_t bytes_saved = 0;
  for (size_t i = 0; i < passes.size(); ++i) {
    if (i > 0) {
      EXPECT_EQ(passes[i].nodes_before, passes[i - 1].nodes_after) << passes[i].pass;
    }
    EXPECT_EQ(passes[i].nodes_removed, passes[i].nodes_before - passes[i].nodes_after) << passes[i].pass;
    ops_fused += passes[i].ops_fused;
    bytes_saved += passes[i].bytes_saved;
  }
  EXPECT_EQ(passes.front().nodes_before, f.stats().nodes_traced);
  EXPECT_EQ(passes.back().nodes_after, f.stats().nodes_compiled);
  EXPECT_EQ(ops_fused, 20);
  EXPECT_GT(bytes_saved, 0);
}

TEST(MemoryPlan, ViewsKeepTheirBaseAliveAndGraphOutputsAreNotPlanned) {
  graph::Graph g;
  TensorMeta m{Shape{4}, DType::kFloat32}, r{Shape{2, 2}, DType::kFloat32};
  graph::ValueId x = g.add_input(m);
  graph::ValueId xs[] = {x, x};
  TensorMeta om[] = {m}, orr[] = {r};
  graph::ValueId a = g.outputs(g.add_node(op_def(OpId::k_add), {}, xs, om))[0];
  graph::ValueId av[] = {a};
  graph::ValueId v = g.outputs(g.add_node(op_def(OpId::k_reshape), Attrs::of(std::vector<int64_t>{2, 2}), av, orr))[0];
  graph::ValueId xx[] = {x, x};
  graph::ValueId b = g.outputs(g.add_node(op_def(OpId::k_mul), {}, xx, om))[0];
  graph::ValueId vv[] = {v};
  graph::ValueId c = g.outputs(g.add_node(op_def(OpId::k_neg), {}, vv, orr))[0];
  graph::ValueId bb[] = {b};
  graph::ValueId d = g.outputs(g.add_node(op_def(OpId::k_exp), {}, bb, om))[0];
  g.set_outputs({c, d});
  g.validate();
  std::vector<bool> plannable(g.num_values(), false);
  plannable[a] = plannable[b] = true;
  graph::MemoryPlan p = graph::plan_memory(g, plannable);
  EXPECT_EQ(p.last_use[a], 3);  // read through its view by node 3
  EXPECT_GE(p.buffer_of[a], 0);
  EXPECT_GE(p.buffer_of[b], 0);
  EXPECT_NE(p.buffer_of[a], p.buffer_of[b]);  // both live at node 2
  EXPECT_EQ(p.buffer_of[c], -1);
  EXPECT_EQ(p.last_use[c], (int)g.num_nodes());
  EXPECT_EQ(p.planned_bytes, 32);
}

TEST(Jit, CellInGraphModeCompilesOnFirstCall) {
  nn::Dense layer(4, 3, true, "relu", /*seed=*/5);
  Tensor x = random_normal({2, 4}, 9);
  Tensor eager = layer(x);
  ContextGuard restore;
  set_exec_mode(ExecMode::kGraph);
  Tensor g1 = layer(x), g2 = layer(x);
  set_exec_mode(ExecMode::kEager);
  EXPECT_EQ(bytes(g1), bytes(eager));
  EXPECT_EQ(bytes(g2), bytes(eager));
  JitFunction f = jit(layer);
  EXPECT_EQ(bytes(f.call1({x})), bytes(eager));
  EXPECT_EQ(bytes(f.call1({x})), bytes(eager));
}

// The usual graph-mode training loop: set_exec_mode(kGraph), then value_and_grad over a loss
// that calls the network. The forward runs compiled under the tape; gradients and the training
// flag's static argument behave as in eager mode.
TEST(Jit, GraphModeCellTrainsLikeEager) {
  auto run = [](ExecMode mode) {
    nn::Dense layer(4, 3, true, "relu", /*seed=*/5);
    optim::SGD opt(layer.trainable_params(), 0.1);
    Tensor x = random_normal({8, 4}, 9), y = random_normal({8, 3}, 10);
    auto loss = [&](const std::vector<Tensor>& in) { return nn::mse_loss(layer(in[0]), in[1]); };
    auto grad_fn = value_and_grad(loss, GradPosition::none(), layer.trainable_params());
    ContextGuard restore;
    set_exec_mode(mode);
    std::vector<std::vector<uint8_t>> out;
    for (int s = 0; s < 5; ++s) {
      ValueAndGrad vg = grad_fn({x, y});
      opt(vg.weight_grads);
      out.push_back(bytes(vg.value));
    }
    layer.set_train(false);
    out.push_back(bytes(layer(x)));  // a new static argument: traced again
    if (mode == ExecMode::kGraph) {
      const JitFunction* f = static_cast<const JitFunction*>(layer.graph_cache().get());
      EXPECT_TRUE(f != nullptr && f->stats().hits == 4 && f->stats().misses == 2);
    } else {
      EXPECT_EQ(layer.graph_cache(), nullptr);
    }
    return out;
  };
  EXPECT_EQ(run(ExecMode::kGraph), run(ExecMode::kEager));
}

TEST(Jit, ValueAndGradOfAJittedFunctionSeesTheExecutorsOps) {
  Tensor w = random_normal({3, 2}, 4);
  JitFunction f = jit(TensorFn([&](const std::vector<Tensor>& in) { return sum(relu(matmul(in[0], w))); }));
  auto loss = [&](const std::vector<Tensor>& in) { return f.call1(in); };
  auto eager_loss = [&](const std::vector<Tensor>& in) { return sum(relu(matmul(in[0], w))); };
  Tensor x = random_normal({5, 3}, 6);
  ValueAndGrad want = value_and_grad(eager_loss)({x});
  for (int call = 0; call < 3; ++call) {  // trace, then the compiled graph twice
    ValueAndGrad got = value_and_grad(loss)({x});
    EXPECT_EQ(bytes(got.value), bytes(want.value)) << call;
    EXPECT_EQ(bytes(got.input_grads[0]), bytes(want.input_grads[0])) << call;
  }
}

TEST(Jit, JitOfValueAndGradIsOneGraphWithTheBackwardOps) {
  Tensor w = random_normal({3, 2}, 4);
  auto fn = [&](const std::vector<Tensor>& in) { return sum(mul(relu(matmul(in[0], w)), in[0].size(0) * 0.5)); };
  auto vg = value_and_grad(fn);
  JitFunction f = jit(TensorsFn([&](const std::vector<Tensor>& in) {
    ValueAndGrad r = vg(in);
    return std::vector<Tensor>{r.value, r.input_grads[0]};
  }));
  Tensor x = random_normal({5, 3}, 6);
  ValueAndGrad want = vg({x});
  for (int call = 0; call < 3; ++call) {
    std::vector<Tensor> got = f({x});
    EXPECT_EQ(bytes(got[0]), bytes(want.value)) << call;
    EXPECT_EQ(bytes(got[1]), bytes(want.input_grads[0])) << call;
  }
  bool has_backward_matmul = false;
  int matmuls = 0;
  for (const Node& n : f.last_graph()->nodes()) matmuls += n.op() == OpId::k_matmul;
  has_backward_matmul = matmuls >= 2;
  EXPECT_TRUE(has_backward_matmul);
}

TEST(Jit, AnOpWithoutABackwardRuleUnderValueAndGradFailsAtTraceTime) {
  // adaptive_avg_pool2d_grad declares no gradient of its own; on the path it must fail at once.
  auto fn = [](const std::vector<Tensor>& in) { return sum(adaptive_avg_pool2d_grad(in[0], in[1])); };
  JitFunction f = jit(TensorsFn([&](const std::vector<Tensor>& in) { return value_and_grad(fn)(in).input_grads; }));
  Tensor g = random_normal({1, 1, 2, 2}, 1), x = random_normal({1, 1, 4, 4}, 2);
  expect_error([&] { f({g, x}); }, ErrorCode::kUnsupported, "adaptive_avg_pool2d_grad", "no backward rule");
  EXPECT_EQ(f.stats().misses, 1);
  EXPECT_EQ(f.last_graph(), nullptr);  // nothing was cached
}

}  // namespace
}  // namespace spore
