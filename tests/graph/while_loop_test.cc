// while_loop eagerly and compiled: a node with subgraphs that the graph executor runs until the
// condition is false (NOTE [Control flow]). Compiled results must equal eager ones bit for bit:
// the executor runs the same ops on the same values, iteration by iteration.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "spore/autograd.h"
#include "spore/control_flow.h"
#include "spore/export.h"
#include "spore/ir.h"
#include "spore/jit.h"
#include "spore/lite.h"
#include "spore/nn/dense.h"
#include "spore/nn/losses.h"
#include "spore/ops.h"
#include "spore/optim.h"
#include "test_util.h"

namespace spore {
namespace {
using test::expect_error;

std::vector<uint8_t> bytes(const Tensor& t) { return t.contiguous().to_bytes(); }
using States = std::vector<Tensor>;

std::filesystem::path temp_file(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("spore_while_" + std::to_string(getpid()) + "_" + name);
}

int count_loops(const graph::Graph& g) {
  int n = 0;
  for (const Node& node : g.nodes()) n += node.op() == OpId::k_while_loop;
  return n;
}

// acc = acc * 1.5 + x, n times (n, a float32 scalar input, sets the trip count).
States counting(const States& in) {
  const Tensor x = in[0], n = in[1];
  BranchFn below = [n](const States& s) { return States{lt(s[0], n)}; };
  BranchFn step = [x](const States& s) { return States{add(s[0], 1.0), add(mul(s[1], 1.5), x)}; };
  return while_loop(below, step, {zeros({}), zeros_like(x)});
}

// NOTE [Lite control flow]: the counting loop exported once runs in Lite for any trip count,
// giving the framework's bytes.
TEST(WhileLoop, LiteRunsAnExportedLoopForAnyTripCount) {
  const Tensor x = Tensor::from_vector<float>({0.1f, -2.5f, 3.25f});
  const auto path = temp_file("counting.spore");
  export_model(TensorsFn(counting), {x, full({}, 3.0)}, path);
  lite::Model model = lite::Model::build_from_file(path);
  std::filesystem::remove(path);
  for (double n : {3.0, 0.0, 7.0, 1.0}) {
    const States want = counting({x, full({}, n)});
    const std::vector<Tensor> got = model.predict(std::vector<Tensor>{x, full({}, n)});
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(bytes(got[0]), bytes(want[0])) << n;
    EXPECT_EQ(bytes(got[1]), bytes(want[1])) << n;
  }
}

// A file's loop that never ends stops at Lite's bound (kMaxLoopIterations) with a typed error
// naming it, whether the file gives no bound or a huge one.
TEST(WhileLoop, LiteStopsAnEndlessLoopAtItsBound) {
  const auto path = temp_file("endless.spore");
  export_model(TensorsFn([](const States& in) {
                 // Ends at once for the example's 10; never for 0 (the body keeps 0).
                 BranchFn below = [](const States& s) { return States{lt(s[0], scalar_like(s[0], 5.0))}; };
                 BranchFn same = [](const States& s) { return States{abs(s[0])}; };
                 return while_loop(below, same, {in[0]}, WhileOptions{3});
               }),
               {full({}, 10.0)}, path);
  // The exported file bounds the loop at 3; a hostile one says nothing, or a huge number.
  ir::Model m = ir::read_model(path);
  std::filesystem::remove(path);
  for (int64_t bound : {int64_t{0}, int64_t{1} << 40}) {
    for (ir::Node& n : m.graph.nodes)
      if (n.def->id == OpId::k_while_loop) n.attrs = Attrs::of(n.attrs.i(0), bound);
    ir::write_model(path, m);
    lite::Model model = lite::Model::build_from_file(path);
    std::filesystem::remove(path);
    expect_error([&] { model.predict(std::vector<Tensor>{zeros({})}); }, ErrorCode::kValue, "max_iterations (1048576)");
  }
}

TEST(WhileLoop, CountingLoopCompiledEqualsEagerAndTheTripCountChangesWithoutRetracing) {
  JitFunction f = jit(TensorsFn(counting));
  const Tensor x = Tensor::from_vector<float>({0.1f, -2.5f, 3.25f});
  for (double n : {3.0, 0.0, 7.0, 1.0, 3.0}) {
    const Tensor nt = full({}, n);
    States want = counting({x, nt}), got = f({x, nt});
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].item<float>(), (float)n);
    EXPECT_EQ(bytes(got[0]), bytes(want[0])) << n;
    EXPECT_EQ(bytes(got[1]), bytes(want[1])) << n;
  }
  // float64 reference for the 7-step loop: acc_k = 1.5 acc_{k-1} + x.
  std::vector<double> ref(3, 0.0);
  const double xs[3] = {0.1f, -2.5f, 3.25f};
  for (int k = 0; k < 7; ++k)
    for (int i = 0; i < 3; ++i) ref[i] = ref[i] * 1.5 + xs[i];
  const auto got7 = f({x, full({}, 7.0)})[1].to_vector<float>();
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(got7[i], ref[i], 1e-4 * std::abs(ref[i]) + 1e-5);
  EXPECT_EQ(f.stats().misses, 1);  // one trace, whatever the trip count
  EXPECT_EQ(f.stats().hits, 5);
  ASSERT_NE(f.last_graph(), nullptr);
  EXPECT_EQ(count_loops(*f.last_graph()), 1);
  EXPECT_NE(graph::dump(*f.last_graph()).find("[2 subgraphs]"), std::string::npos);
}

// sqrt(a) by Newton's iteration until |x^2 - a| <= 1e-12 a for every element: a data-dependent trip count, with `a`
// (an input of the enclosing function) read by the body and the condition.
States newton(const States& in) {
  const Tensor a = in[0];
  BranchFn far = [a](const States& s) {
    return States{gt(max(div(abs(sub(mul(s[0], s[0]), a)), a)), full({}, 1e-12, DType::kFloat64))};
  };
  BranchFn step = [a](const States& s) { return States{mul(add(s[0], div(a, s[0])), 0.5)}; };
  return while_loop(far, step, {ones_like(a)});
}

TEST(WhileLoop, NewtonIterationIsDataDependentAndMatchesEagerAndSqrt) {
  JitFunction f = jit(TensorsFn(newton));
  for (std::vector<double> av : {std::vector<double>{2, 9, 0.25}, {1e6, 3, 7}, {1, 1, 1}, {123.5, 0.01, 42}}) {
    const Tensor a = Tensor::from_vector<double>(av);
    const Tensor want = newton({a})[0], got = f({a})[0];
    EXPECT_EQ(bytes(got), bytes(want));
    const auto g = got.to_vector<double>();
    for (size_t i = 0; i < av.size(); ++i) EXPECT_NEAR(g[i], std::sqrt(av[i]), 1e-9 * std::sqrt(av[i]));
  }
  EXPECT_EQ(f.stats().misses, 1);
}

TEST(WhileLoop, NestedLoopsCompile) {
  // For i < n: acc += (inner: double y from 1 until it exceeds i) — nested loop nodes.
  auto fn = [](const States& in) {
    const Tensor n = in[0];
    BranchFn outer_cond = [n](const States& s) { return States{lt(s[0], n)}; };
    BranchFn outer_body = [](const States& s) {
      const Tensor i = s[0];
      BranchFn inner_cond = [i](const States& t) { return States{le(t[0], i)}; };
      BranchFn inner_body = [](const States& t) { return States{mul(t[0], 2.0)}; };
      const Tensor y = while_loop(inner_cond, inner_body, {ones({})})[0];
      return States{add(i, 1.0), add(s[1], y)};
    };
    return while_loop(outer_cond, outer_body, {zeros({}), zeros({})});
  };
  JitFunction f = jit(TensorsFn(fn));
  for (double n : {5.0, 0.0, 9.0}) {
    const Tensor nt = full({}, n);
    EXPECT_EQ(bytes(f({nt})[1]), bytes(fn({nt})[1])) << n;
  }
  // n = 9: i = 0..8 -> smallest power of two above i: 1 2 4 4 8 8 8 8 16 = 59.
  EXPECT_EQ(f({full({}, 9.0)})[1].item<float>(), 59.0f);
  EXPECT_EQ(f.stats().misses, 1);
}

// A training step whose forward holds a loop on the data (no gradient through it): the input is
// halved until its largest magnitude is at most 1, then a linear model is fitted with SGD.
States train_step(const States& in) {
  const Tensor x = in[0], y = in[1], w = in[2];
  auto loss = [](const States& a) {
    BranchFn big = [x = a[0]](const States& s) { return States{gt(mul(max(abs(x)), s[0]), ones({}))}; };
    BranchFn halve = [](const States& s) { return States{mul(s[0], 0.5)}; };
    const Tensor scale = while_loop(big, halve, {ones({})})[0];
    const Tensor err = sub(matmul(mul(a[0], scale), a[2]), a[1]);
    return mean(mul(err, err));
  };
  ValueAndGrad vg = value_and_grad(loss, GradPosition(2))({x, y, w});
  return {vg.value, sub(w, mul(vg.input_grads[0], 0.1))};
}

TEST(WhileLoop, ALoopInTheForwardOfAJittedTrainStepTrainsLikeEager) {
  JitFunction step = jit(TensorsFn(train_step));
  Tensor w_eager = random_normal({4, 1}, 3), w_graph = w_eager.clone();
  for (int s = 0; s < 5; ++s) {
    // Magnitudes from 0.5 to 40: the loop runs 0 to 6 times, step by step.
    const Tensor x = mul(random_normal({8, 4}, 10 + s), std::pow(3.0, s) * 0.5), y = random_normal({8, 1}, 20 + s);
    States e = train_step({x, y, w_eager}), g = step({x, y, w_graph});
    EXPECT_EQ(bytes(g[0]), bytes(e[0])) << "loss, step " << s;
    EXPECT_EQ(bytes(g[1]), bytes(e[1])) << "weights, step " << s;
    w_eager = e[1];
    w_graph = g[1];
  }
  EXPECT_EQ(step.stats().misses, 1);
}

// The same with a Dense layer and Adam, whose update nodes take their step count from host
// state at every run (NOTE [Host state in traces]): the executor finds them past the loop node.
TEST(WhileLoop, AnAdamTrainStepWithALoopTrainsLikeEager) {
  auto run = [](bool compiled) {
    nn::Dense layer(4, 1, true, nullptr, 7);
    optim::Adam opt(layer.trainable_params(), 0.05);
    auto loss = [&](const States& in) {
      BranchFn big = [x = in[0]](const States& s) { return States{gt(mul(max(abs(x)), s[0]), ones({}))}; };
      BranchFn halve = [](const States& s) { return States{mul(s[0], 0.5)}; };
      const Tensor scale = while_loop(big, halve, {ones({})})[0];
      return nn::mse_loss(layer(mul(in[0], scale)), in[1]);
    };
    auto grad_fn = value_and_grad(loss, GradPosition::none(), layer.trainable_params());
    auto step = [&](const States& in) {
      ValueAndGrad vg = grad_fn(in);
      opt(vg.weight_grads);
      return vg.value;
    };
    JitFunction f = jit(TensorFn(step));
    std::vector<std::vector<uint8_t>> out;
    for (int s = 0; s < 4; ++s) {
      const Tensor x = mul(random_normal({8, 4}, 30 + s), std::pow(4.0, s)), y = random_normal({8, 1}, 40 + s);
      out.push_back(bytes(compiled ? f.call1({x, y}) : step({x, y})));
    }
    out.push_back(bytes(layer(ones({2, 4}))));  // the trained weights
    if (compiled) {
      EXPECT_EQ(f.stats().misses, 1);
    }
    return out;
  };
  EXPECT_EQ(run(true), run(false));
}

TEST(WhileLoop, DifferentiatingAJittedLoopFromOutsideGivesTheEagerGradient) {
  // value_and_grad(jit(f)): the tape sees the loop's iterations (the trace's eager run, then the
  // executor's subgraph runs), so the gradient is that of the unrolled loop, as eagerly.
  auto fn = [](const States& in) {
    BranchFn small = [](const States& s) { return States{lt(sum(s[0]), full({}, 50.0))}; };
    BranchFn grow = [w = in[1]](const States& s) { return States{add(mul(s[0], w), 1.0)}; };
    return sum(while_loop(small, grow, {in[0]})[0]);
  };
  JitFunction f = jit(TensorFn(fn));
  auto compiled = [&](const States& in) { return f.call1(in); };
  const Tensor x = Tensor::from_vector<float>({0.5f, 1.0f}), w = Tensor::from_vector<float>({1.5f, 2.0f});
  const ValueAndGrad want = value_and_grad(fn, {0, 1})({x, w});
  for (int call = 0; call < 3; ++call) {
    const ValueAndGrad got = value_and_grad(compiled, {0, 1})({x, w});
    EXPECT_EQ(bytes(got.value), bytes(want.value)) << call;
    EXPECT_EQ(bytes(got.input_grads[0]), bytes(want.input_grads[0])) << call;
    EXPECT_EQ(bytes(got.input_grads[1]), bytes(want.input_grads[1])) << call;
  }
}

TEST(WhileLoop, TheGraphPassesKeepLoopsApartAndAlive) {
  // Two loops with the same inputs and attributes but different bodies: CSE must not merge
  // them; DCE keeps each (their results are read) and what they read.
  auto fn = [](const States& in) {
    BranchFn small = [](const States& s) { return States{lt(sum(s[0]), full({}, 100.0))}; };
    BranchFn twice = [](const States& s) { return States{mul(s[0], 2.0)}; };
    BranchFn thrice = [](const States& s) { return States{mul(s[0], 3.0)}; };
    const Tensor start = add(in[0], 1.0);
    return States{while_loop(small, twice, {start})[0], while_loop(small, thrice, {start})[0]};
  };
  JitFunction f = jit(TensorsFn(fn));
  const Tensor x = Tensor::from_vector<float>({0.5f, 1.0f});
  for (int call = 0; call < 2; ++call) {
    States got = f({x}), want = fn({x});
    EXPECT_EQ(bytes(got[0]), bytes(want[0]));
    EXPECT_EQ(bytes(got[1]), bytes(want[1]));
  }
  EXPECT_EQ(f({x})[0].to_vector<float>(), (std::vector<float>{48, 64}));   // 1.5 2 -> x2 five times
  EXPECT_EQ(f({x})[1].to_vector<float>(), (std::vector<float>{121.5f, 162}));  // x3 four times
  EXPECT_EQ(count_loops(*f.last_graph()), 2);
}

TEST(WhileLoop, ErrorsNameTheLoopAndTheFix) {
  BranchFn below = [](const States& s) { return States{lt(sum(s[0]), full({}, 100.0))}; };
  BranchFn twice = [](const States& s) { return States{mul(s[0], 2.0)}; };
  // Reverse mode through the loop inside a trace: refused at trace time, naming the op and the fix.
  auto through = [&](const States& in) { return sum(while_loop(below, twice, {mul(in[0], 1.0)})[0]); };
  JitFunction g = jit(TensorsFn([&](const States& in) { return value_and_grad(through)(in).input_grads; }));
  expect_error([&] { g({ones({2})}); }, ErrorCode::kUnsupported, "while_loop", "fixed number", "cond");
  EXPECT_EQ(g.last_graph(), nullptr);
  // ...while eagerly the loop unrolls into ops and differentiates: d/dx sum(64 x) = 64.
  EXPECT_EQ(value_and_grad(through)({ones({2})}).input_grads[0].to_vector<float>(), (std::vector<float>{64, 64}));

  // A state whose shape changes in the body: eagerly and at trace time.
  BranchFn grows = [](const States& s) { return States{concat({s[0], s[0]}, 0)}; };
  expect_error([&] { while_loop(below, grows, {ones({1})}); }, ErrorCode::kShape, "state 0", "float32[1]", "float32[2]");
  JitFunction h = jit(TensorsFn([&](const States& in) { return while_loop(below, grows, in); }));
  expect_error([&] { h({ones({1})}); }, ErrorCode::kShape, "while_loop", "state 0 changes");

  // The trip-count guard, eagerly and compiled (where the first call is the trace's eager run).
  WhileOptions five;
  five.max_iterations = 5;
  expect_error([&] { while_loop(below, twice, {ones({1})}, five); }, ErrorCode::kValue, "max_iterations (5)");
  JitFunction guarded = jit(TensorsFn([&](const States& in) { return while_loop(below, twice, in, five); }));
  EXPECT_EQ(guarded({full({1}, 10.0)})[0].item<float>(), 160.0f);  // 4 steps: within the bound
  expect_error([&] { guarded({full({1}, 1.0)}); }, ErrorCode::kValue, "max_iterations (5)");  // 7 steps, compiled
  EXPECT_EQ(guarded.stats().misses, 1);

  // Reading the condition on the host while tracing it, a body with a side effect.
  BranchFn reads = [](const States& s) { return States{full({}, s[0].item<float>() < 3 ? 1.0 : 0.0, DType::kBool)}; };
  JitFunction r = jit(TensorsFn([&](const States& in) { return while_loop(reads, twice, in); }));
  expect_error([&] { r({ones({})}); }, ErrorCode::kValue, "while_loop condition", "host");
  Tensor counter = zeros({});
  BranchFn writes = [&](const States& s) {
    counter.copy_(add(counter, 1.0));
    return States{mul(s[0], 2.0)};
  };
  JitFunction w = jit(TensorsFn([&](const States& in) { return while_loop(below, writes, in); }));
  expect_error([&] { w({ones({1})}); }, ErrorCode::kUnsupported, "while_loop", "in place", "assign");
  // The op itself has no kernel: dispatching it names it and the way in.
  expect_error([&] { dispatch(OpId::k_while_loop, std::vector<Tensor>{ones({1})}, Attrs::of(int64_t(1), int64_t(0))); },
               ErrorCode::kUnsupported, "while_loop", "subgraphs", "spore::while_loop");
}

// More state than an ordinary op's results (Inference::kMaxOutputs is 4): seven tensors of
// mixed shapes and dtypes, carried by one compiled node (NOTE [Control-flow results]), equal to
// the loop run eagerly for trip counts other than the traced one.
TEST(WhileLoop, ACompiledLoopCarriesManyStateTensors) {
  BranchFn cond = [](const States& s) { return States{lt(s[0], full({}, 0.0, DType::kInt64))}; };
  BranchFn body = [](const States& s) {
    States n = s;
    n[0] = add(s[0], full({}, 1.0, DType::kInt64));
    for (size_t i = 1; i < s.size(); ++i) n[i] = s[i].dtype() == DType::kInt32 ? add(s[i], s[i]) : add(mul(s[i], 0.5), 1.0);
    return n;
  };
  auto make = [](int64_t trips) {
    States st{full({}, (double)-trips, DType::kInt64)};
    for (int i = 1; i < 7; ++i)
      st.push_back(i % 3 == 0 ? full({i}, (double)i, DType::kInt32) : reshape(arange(0, 2.0 * i, 1.0, DType::kFloat32), {2, i}));
    return st;
  };
  JitFunction f = jit(TensorsFn([&](const States& in) { return while_loop(cond, body, in); }));
  for (int64_t trips : {3, 0, 9}) {
    const States got = f(make(trips));
    const States want = while_loop(cond, body, make(trips));
    ASSERT_EQ(got.size(), 7u);
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].shape(), want[i].shape()) << i;
      EXPECT_EQ(got[i].dtype(), want[i].dtype()) << i;
      EXPECT_EQ(max_abs_diff(got[i], want[i]), 0.0) << "state " << i << " after " << trips << " trips";
    }
    EXPECT_EQ(got[0].item<int64_t>(), 0);
  }
  EXPECT_EQ(f.stats().misses, 1);  // one trace serves every trip count
}

TEST(WhileLoop, ALoopPassingItsStateThroughReturnsTensorsOfItsOwn) {
  // Zero trips (and an entry the body never changes) leave the input as the result; the
  // compiled graph must not let a later node's planned buffer overwrite it.
  auto fn = [](const States& in) {
    const Tensor a = add(in[0], 1.0);
    BranchFn never = [](const States& s) { return States{lt(sum(s[0]), full({}, -1.0))}; };
    BranchFn same = [](const States& s) { return States{s[0], mul(s[1], 2.0)}; };
    States r = while_loop(never, same, {a, a});
    return States{add(mul(a, 3.0), r[0]), r[1], mul(a, 5.0)};
  };
  JitFunction f = jit(TensorsFn(fn));
  const Tensor x = Tensor::from_vector<float>({1, 2, 3});
  for (int call = 0; call < 3; ++call) {
    States got = f({x}), want = fn({x});
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(bytes(got[i]), bytes(want[i])) << call << " " << i;
  }
}

TEST(WhileLoop, TheIrRoundTripsTheSubgraphsLiteRunsThemAndOnnxRefusesByName) {
  auto fn = [](const States& in) { return newton(in); };
  const Tensor a = Tensor::from_vector<double>({2, 9});
  const auto path = temp_file("newton.spore");
  export_model(fn, {a}, path);
  const ir::Model m = ir::read_model(path);
  EXPECT_EQ(m.ir_version, 2u);
  EXPECT_EQ(ir::required_version(m).first, 2u);
  EXPECT_NE(ir::required_version(m).second.find("while_loop"), std::string::npos);
  int loops = 0;
  for (const ir::Node& n : m.graph.nodes) {
    if (n.def->id != OpId::k_while_loop) continue;
    ++loops;
    ASSERT_EQ(n.subgraphs.size(), 2u);
    EXPECT_EQ(n.attrs.i(0), 1);  // one state tensor
    // The subgraphs take the node's inputs: the state, then `a` (read by both functions).
    EXPECT_EQ(n.subgraphs[0].inputs.size(), n.inputs.size());
    EXPECT_EQ(n.subgraphs[1].inputs.size(), n.inputs.size());
    EXPECT_EQ(n.subgraphs[0].outputs.size(), 1u);
    EXPECT_EQ(n.subgraphs[1].outputs.size(), 1u);
    // Same graph as traced: compare node ops with a fresh trace's subgraphs.
    JitFunction f = jit(TensorsFn(fn));
    f({a});
    for (const Node& gn : f.last_graph()->nodes())
      if (gn.op() == OpId::k_while_loop) {
        const int idx = (int)(&gn - f.last_graph()->nodes().data());
        auto subs = f.last_graph()->subgraphs(idx);
        for (int s = 0; s < 2; ++s) {
          ASSERT_EQ(subs[s]->num_nodes(), n.subgraphs[s].nodes.size());
          for (size_t k = 0; k < subs[s]->num_nodes(); ++k) EXPECT_EQ(subs[s]->node((int)k).def, n.subgraphs[s].nodes[k].def);
        }
      }
  }
  EXPECT_EQ(loops, 1);
  // Bytes again: write what was read, read it back, same bytes (a stable round trip).
  const ir::Model again = ir::read_model_bytes(ir::model_to_bytes(m));
  EXPECT_EQ(ir::model_to_bytes(again), ir::model_to_bytes(m));
  // Version 1 cannot hold subgraphs: the writer says which node needs version 2.
  expect_error([&] { export_model(fn, {a}, temp_file("v1.spore"), ExportOptions().version(1)); }, ErrorCode::kVersion,
               "while_loop", "subgraphs");
  // Lite runs the loop on the graph library's loop runner (NOTE [Lite control flow]): the
  // framework's bytes, with other inputs than the export's too (another trip count).
  lite::Model lite_model = lite::Model::build_from_file(path);
  for (const Tensor& x : {a, Tensor::from_vector<double>({16, 0.25})})
    EXPECT_EQ(bytes(lite_model.predict(std::vector<Tensor>{x})[0]), bytes(fn({x})[0]));
  expect_error([&] { export_onnx(fn, {a}, temp_file("newton.onnx")); }, ErrorCode::kUnsupported, "subgraphs");
  // A file whose while_loop lost its subgraphs is a format error, not a crash.
  ir::Model broken = m;
  for (ir::Node& n : broken.graph.nodes)
    if (n.def->id == OpId::k_while_loop) n.subgraphs.clear();
  expect_error([&] { ir::model_to_bytes(broken); }, ErrorCode::kValue, "while_loop", "0 subgraphs", "takes 2");
  std::filesystem::remove(path);
}

// The committed file of a Newton loop (tests/fixtures/ir/while_newton_v2.spore, also a seed of
// the IR fuzz target) keeps reading as the graph a fresh export writes: a loop node whose
// subgraphs hold the same ops. SPORE_REGENERATE_FIXTURES=1 rewrites it.
TEST(WhileLoop, TheCommittedLoopFileStillReads) {
  auto fn = [](const States& in) { return newton(in); };
  const Tensor a = Tensor::from_vector<double>({2, 9});
  const auto path = std::filesystem::path(SPORE_SOURCE_DIR) / "tests/fixtures/ir/while_newton_v2.spore";
  if (std::getenv("SPORE_REGENERATE_FIXTURES")) export_model(fn, {a}, path);
  const ir::Model got = ir::read_model(path);
  const ir::Model want = trace_to_ir(fn, {a});
  EXPECT_EQ(got.ir_version, 2u);
  ASSERT_EQ(got.graph.nodes.size(), want.graph.nodes.size());
  int loops = 0;
  for (size_t n = 0; n < want.graph.nodes.size(); ++n) {
    const ir::Node &g = got.graph.nodes[n], &w = want.graph.nodes[n];
    EXPECT_EQ(g.def, w.def) << n;
    ASSERT_EQ(g.subgraphs.size(), w.subgraphs.size()) << n;
    loops += g.def->id == OpId::k_while_loop;
    for (size_t s = 0; s < w.subgraphs.size(); ++s) {
      // The same ops, compared as a sorted list: the order a trace records them in follows the
      // compiler's evaluation order of call arguments (gcc and clang differ), and the committed
      // file was written by one of them.
      auto names = [](const ir::Graph& sg) {
        std::vector<std::string> v;
        for (const ir::Node& k : sg.nodes) v.push_back(k.def->name);
        std::sort(v.begin(), v.end());
        return v;
      };
      EXPECT_EQ(names(g.subgraphs[s]), names(w.subgraphs[s])) << n << " " << s;
    }
  }
  EXPECT_EQ(loops, 1);
}

}  // namespace
}  // namespace spore
