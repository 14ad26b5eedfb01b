// Training benchmarks of issue 3 (peers: bench/peers/torch_train.py, bench/peers/libtorch_linreg.cpp;
// runner and ratios: bench/run_train.sh):
//   BM_LinregTrain200   the chapter's 05_autograd_train loop in float32: 64x4 data, Dense(4, 1),
//                       MSE, Adam lr 0.05, 200 steps (one iteration = 200 steps on a fresh layer)
//   BM_MlpStep/0|1      one step (forward, backward, Adam) of an MLP 784-512-512-10 (ReLU) at
//                       batch 128 with cross-entropy: 0 = float32, 1 = to_float(bfloat16) over
//                       float32 masters (PyTorch's autocast bf16 is the peer)
//   BM_DigitsCnnStep    one step of the digits CNN (examples/common/digits_cnn.h) at batch 32
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>

#include "common/digits_cnn.h"
#include "common/linear_regression.h"
#include "spore/autograd.h"
#include "spore/context.h"
#include "spore/nn/activation.h"
#include "spore/nn/dense.h"
#include "spore/nn/losses.h"
#include "spore/ops.h"
#include "spore/optim.h"

namespace {
using namespace spore;

void BM_LinregTrain200(benchmark::State& state) {
  examples::RegressionData data = examples::make_regression_data(64, DType::kFloat32);
  double end_loss = 0;
  for (auto _ : state) {
    nn::Dense layer(4, 1, true, nullptr, 1);
    end_loss = examples::train_linear_regression(layer, data, 200, 0.05).end_loss;
  }
  state.counters["end_loss"] = end_loss;
  state.counters["us_per_step"] =
      benchmark::Counter(200.0 * (double)state.iterations(), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_LinregTrain200)->Unit(benchmark::kMillisecond)->UseRealTime();

// Shared by the MLP and CNN steps: value_and_grad of cross-entropy plus an Adam step.
template <typename Net>
void run_steps(benchmark::State& state, Net& net, const Tensor& x, const Tensor& y, double lr) {
  optim::Adam opt(net.trainable_params(), lr);
  auto loss_fn = [&net](const std::vector<Tensor>& in) { return nn::cross_entropy(net(in[0]), in[1]); };
  auto grad_fn = value_and_grad(loss_fn, GradPosition::none(), net.trainable_params());
  double loss = 0;
  for (int i = 0; i < 5; ++i) opt(grad_fn({x, y}).weight_grads);  // warm-up: allocator, primitives
  for (auto _ : state) {
    ValueAndGrad vg = grad_fn({x, y});
    opt(vg.weight_grads);
    loss = vg.value.item<double>();  // forces the step to finish, as PyTorch's loss.item()
  }
  state.counters["loss"] = loss;
}

void BM_MlpStep(benchmark::State& state) {
  nn::SequentialCell net({std::make_shared<nn::Dense>(784, 512, true, "relu", 1),
                          std::make_shared<nn::Dense>(512, 512, true, "relu", 2),
                          std::make_shared<nn::Dense>(512, 10, true, nullptr, 3)});
  if (state.range(0) == 1) net.to_float(DType::kBFloat16);
  Tensor x = random_normal({128, 784}, 5);
  Tensor y = cast(mul(random_uniform({128}, 6), 10.0), DType::kInt64);
  run_steps(state, net, x, y, 1e-3);
  const double flop = 3.0 * 2 * 128 * (784 * 512 + 512 * 512 + 512 * 10);
  state.counters["GFLOP/s"] = benchmark::Counter(flop * (double)state.iterations() / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_MlpStep)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_DigitsCnnStep(benchmark::State& state) {
  auto net = examples::make_digits_cnn(0);
  Tensor x = random_uniform({32, 1, 8, 8}, 7);
  Tensor y = cast(mul(random_uniform({32}, 8), 10.0), DType::kInt64);
  run_steps(state, *net, x, y, 2e-3);
}
BENCHMARK(BM_DigitsCnnStep)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

// SPORE_BENCH_THREADS=n runs Spore on n threads (default: one per core), as the peers' runner sets.
int main(int argc, char** argv) {
  if (const char* t = std::getenv("SPORE_BENCH_THREADS")) spore::set_num_threads(std::atoi(t));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
