// Graph mode against eager (issue 9): the chapter's regression loop (200 Adam steps, float32),
// the MLP training step (784-512-512-10, batch 128, float32 and bf16 mixed) compiled by jit as
// one graph (forward, backward, Adam), and the trace-and-compile time of that step. Runner with
// the libtorch peer and ratios: bench/run_graph.py.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>

#include "common/linear_regression.h"
#include "spore/autograd.h"
#include "spore/context.h"
#include "spore/jit.h"
#include "spore/nn/dense.h"
#include "spore/nn/losses.h"
#include "spore/ops.h"
#include "spore/optim.h"

namespace {
using namespace spore;

// One training step of `net` as a function of (x, y): value_and_grad then the optimizer.
struct Trainer {
  Trainer(nn::Cell& net, double lr, Tensor (*loss)(const Tensor&, const Tensor&))
      : opt(net.trainable_params(), lr),
        grad_fn(value_and_grad([&net, loss](const std::vector<Tensor>& in) { return loss(net(in[0]), in[1]); },
                               GradPosition::none(), net.trainable_params())) {}
  Tensor step(const std::vector<Tensor>& in) {
    ValueAndGrad vg = grad_fn(in);
    opt(vg.weight_grads);
    return vg.value;
  }
  optim::Adam opt;
  std::function<ValueAndGrad(const std::vector<Tensor>&)> grad_fn;
};

Tensor mse(const Tensor& p, const Tensor& y) { return nn::mse_loss(p, y); }
Tensor xent(const Tensor& p, const Tensor& y) { return nn::cross_entropy(p, y); }

// 200 steps on a fresh layer, the loss read back every step (as the chapter's loop prints it).
// Compiled: the first step traces and compiles, the other 199 run the graph. compiled:2 is the
// same without the graph passes (what they cost or save on a graph of tiny tensors).
void BM_Regression200(benchmark::State& state) {
  const bool compiled = state.range(0) >= 1;
  JitOptions options;
  options.optimize = state.range(0) != 2;
  examples::RegressionData data = examples::make_regression_data(64, DType::kFloat32);
  double loss = 0, first_call_ms = 0;
  for (auto _ : state) {
    nn::Dense layer(4, 1, true, nullptr, 1);
    Trainer t(layer, 0.05, &mse);
    JitFunction f = jit(TensorFn([&t](const std::vector<Tensor>& in) { return t.step(in); }), options);
    for (int s = 0; s < 200; ++s) loss = (compiled ? f.call1({data.x, data.y}) : t.step({data.x, data.y})).item<double>();
    first_call_ms += f.stats().last_trace_ms + f.stats().last_compile_ms;
  }
  state.counters["end_loss"] = loss;
  if (compiled) state.counters["trace_compile_ms"] = first_call_ms / (double)state.iterations();
  state.counters["us_per_step"] =
      benchmark::Counter(200.0 * (double)state.iterations(), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_Regression200)->Arg(0)->Arg(1)->Arg(2)->ArgNames({"compiled"})->Unit(benchmark::kMillisecond)->UseRealTime();

std::unique_ptr<nn::SequentialCell> make_mlp(bool bf16) {
  auto net = std::make_unique<nn::SequentialCell>(std::vector<nn::CellPtr>{
      std::make_shared<nn::Dense>(784, 512, true, "relu", 1), std::make_shared<nn::Dense>(512, 512, true, "relu", 2),
      std::make_shared<nn::Dense>(512, 10, true, nullptr, 3)});
  if (bf16) net->to_float(DType::kBFloat16);
  return net;
}

// args: compiled (0/1), bf16 mixed (0/1).
void BM_MlpStep(benchmark::State& state) {
  const bool compiled = state.range(0) == 1;
  auto net = make_mlp(state.range(1) == 1);
  Tensor x = random_normal({128, 784}, 5);
  Tensor y = cast(mul(random_uniform({128}, 6), 10.0), DType::kInt64);
  Trainer t(*net, 1e-3, &xent);
  JitFunction f = jit(TensorFn([&t](const std::vector<Tensor>& in) { return t.step(in); }));
  auto step = [&] { return compiled ? f.call1({x, y}) : t.step({x, y}); };
  for (int i = 0; i < 5; ++i) step();  // warm-up (and the trace)
  double loss = 0;
  for (auto _ : state) loss = step().item<double>();
  state.counters["loss"] = loss;
  if (compiled) {
    state.counters["planned_MB"] = (double)f.stats().planned_peak_bytes / 1e6;
    state.counters["unplanned_MB"] = (double)f.stats().unplanned_peak_bytes / 1e6;
    state.counters["in_place"] = f.stats().in_place;
    state.counters["nodes"] = f.stats().nodes_compiled;
  }
}
BENCHMARK(BM_MlpStep)->ArgsProduct({{0, 1}, {0, 1}})->ArgNames({"compiled", "bf16"})->Unit(benchmark::kMillisecond)->UseRealTime();

// The first call of a jitted MLP step: the traced (eager) step, then passes, memory plan and the
// executor's planning. Reported: the whole call, and the compile part alone (trace excluded).
void BM_MlpTraceAndCompile(benchmark::State& state) {
  auto net = make_mlp(false);
  Tensor x = random_normal({128, 784}, 5);
  Tensor y = cast(mul(random_uniform({128}, 6), 10.0), DType::kInt64);
  Trainer t(*net, 1e-3, &xent);
  double trace_ms = 0, compile_ms = 0;
  for (int i = 0; i < 3; ++i) t.step({x, y});  // warm-up: allocator, primitives
  for (auto _ : state) {
    JitFunction f = jit(TensorFn([&t](const std::vector<Tensor>& in) { return t.step(in); }));
    f.call1({x, y});
    trace_ms += f.stats().last_trace_ms;
    compile_ms += f.stats().last_compile_ms;
  }
  state.counters["trace_ms"] = trace_ms / (double)state.iterations();
  state.counters["compile_ms"] = compile_ms / (double)state.iterations();
}
BENCHMARK(BM_MlpTraceAndCompile)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  if (const char* t = std::getenv("SPORE_BENCH_THREADS")) spore::set_num_threads(std::atoi(t));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
