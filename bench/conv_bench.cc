// conv and pooling benchmarks: conv2d forward and both gradients on a ResNet-style 3x3 layer
// and a MobileNet-style depthwise layer (float32 through oneDNN, float64 through the direct
// loops), and max pooling, with GFLOP/s counters. Run with DNNL_VERBOSE=1 to see which oneDNN
// implementation each problem gets.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "spore/context.h"
#include "spore/ops.h"
#include "spore/tensor.h"

namespace {

using spore::Conv2dOptions;
using spore::DType;
using spore::Shape;
using spore::Tensor;

// Values in [-1, 1) from a fixed LCG, made directly in the dtype (no cast op involved).
template <typename T>
Tensor filled(const Shape& s, uint32_t seed) {
  std::vector<T> v((size_t)s.numel());
  for (auto& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = T((float)(seed >> 8) / 8388608.0f - 1.0f);
  }
  return Tensor::from_vector(v, s);
}

struct Layer {
  int64_t n, c, hw, o, k, groups;
};
// range(0): 0 = 3x3 64->64 on 28x28, 1 = depthwise 3x3 on 96 channels of 28x28.
Layer layer(int64_t which) {
  return which == 0 ? Layer{4, 64, 28, 64, 3, 1} : Layer{4, 96, 28, 96, 3, 96};
}

// pass: 0 forward, 1 grad input, 2 grad weight.
template <typename T>
void BM_Conv(benchmark::State& state) {
  const Layer l = layer(state.range(0));
  const int pass = (int)state.range(1);
  spore::set_num_threads((int)state.range(2));
  Conv2dOptions opt{{1, 1}, {1, 1}, {1, 1}, l.groups};
  const std::vector<int64_t> xs{l.n, l.c, l.hw, l.hw}, ws{l.o, l.c / l.groups, l.k, l.k};
  Tensor x = filled<T>(Shape(xs), 1), w = filled<T>(Shape(ws), 2);
  Tensor gy = filled<T>(Shape{l.n, l.o, l.hw, l.hw}, 3);
  auto run = [&] {
    return pass == 0   ? spore::conv2d(x, w, opt)
           : pass == 1 ? spore::conv2d_grad_input(gy, w, xs, opt)
                       : spore::conv2d_grad_weight(gy, x, ws, opt);
  };
  Tensor r = run();  // warm-up: primitive creation happens here
  for (auto _ : state) {
    r = run();
    benchmark::DoNotOptimize(r.data_ptr());
  }
  const double macs = (double)l.n * l.o * l.hw * l.hw * (l.c / l.groups) * l.k * l.k;
  state.counters["GFLOP/s"] =
      benchmark::Counter(2 * macs / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

void conv_args(benchmark::internal::Benchmark* b) {
  for (int64_t which : {0, 1})
    for (int64_t pass : {0, 1, 2})
      for (int64_t t : {1, 2}) b->Args({which, pass, t});
  b->ArgNames({"layer", "pass", "threads"})->UseRealTime()->Unit(benchmark::kMillisecond);
}
BENCHMARK(BM_Conv<float>)->Name("BM_Conv2dF32")->Apply(conv_args);
BENCHMARK(BM_Conv<double>)->Name("BM_Conv2dF64")->Apply(conv_args);

template <typename T>
void BM_MaxPool(benchmark::State& state) {
  spore::set_num_threads((int)state.range(0));
  Tensor x = filled<T>(Shape{8, 64, 56, 56}, 4);
  const spore::Pool2dOptions opt{{3, 3}, {2, 2}, {1, 1}, false};
  for (auto _ : state) {
    Tensor y = spore::max_pool2d(x, opt);
    benchmark::DoNotOptimize(y.data_ptr());
  }
  state.SetBytesProcessed((int64_t)state.iterations() * x.numel() * (int64_t)sizeof(T));
}
BENCHMARK(BM_MaxPool<float>)
    ->Name("BM_MaxPool3x3s2F32")
    ->Arg(1)
    ->Arg(2)
    ->ArgName("threads")
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
