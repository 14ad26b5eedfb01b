// matmul benchmarks (bench/README.md, "matmul"): Spore's float32 and bfloat16 matmul on square
// matrices at 1 and 2 threads, with GFLOP/s as a counter, and the small-size crossover between
// the direct kernel and oneDNN that sets kMatmulDirectMaxMacs. The OpenBLAS peer is a separate
// program (bench/peers/sgemm_openblas.c) run by bench/run_matmul.sh.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "backends/cpu/matmul_geometry.h"
#include "spore/context.h"
#include "spore/ops.h"
#include "spore/tensor.h"

namespace {

using spore::DType;
using spore::Shape;
using spore::Tensor;

// Values in [-1, 1) from a fixed LCG, made directly in the dtype (no cast op involved).
template <typename T>
Tensor square(int64_t n, uint32_t seed) {
  std::vector<T> v((size_t)(n * n));
  for (auto& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = T((float)(seed >> 8) / 8388608.0f - 1.0f);
  }
  return Tensor::from_vector(v, Shape{n, n});
}

void set_flops(benchmark::State& state, int64_t m, int64_t n, int64_t k) {
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * (double)m * (double)n * (double)k / 1e9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

template <typename T>
void BM_SporeMatmul(benchmark::State& state) {
  const int64_t n = state.range(0);
  spore::set_num_threads((int)state.range(1));
  Tensor a = square<T>(n, 1), b = square<T>(n, 2);
  Tensor c = spore::matmul(a, b);  // warm-up: primitive creation and JIT happen here
  for (auto _ : state) {
    c = spore::matmul(a, b);
    benchmark::DoNotOptimize(c.data_ptr());
  }
  set_flops(state, n, n, n);
}

void square_args(benchmark::internal::Benchmark* b) {
  for (int64_t n : {1024, 2048, 4096})
    for (int64_t t : {1, 2}) b->Args({n, t});
  b->ArgNames({"n", "threads"})->UseRealTime()->Unit(benchmark::kMillisecond);
}
BENCHMARK(BM_SporeMatmul<float>)->Name("BM_SporeMatmulF32")->Apply(square_args);
BENCHMARK(BM_SporeMatmul<spore::BFloat16>)->Name("BM_SporeMatmulBF16")->Apply(square_args);
BENCHMARK(BM_SporeMatmul<double>)
    ->Name("BM_SporeMatmulF64")
    ->Args({512, 1})
    ->Args({512, 2})
    ->ArgNames({"n", "threads"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// Crossover: the same float32 problem through each path, called directly, one thread.
void BM_SmallPath(benchmark::State& state) {
  const int64_t n = state.range(0);
  const bool dnnl = state.range(1) != 0;
  spore::set_num_threads(1);
  Tensor a = square<float>(n, 1), b = square<float>(n, 2), c = Tensor::empty(Shape{n, n}, DType::kFloat32);
  const spore::cpu::MatmulGeometry g = spore::cpu::matmul_geometry(a, b, c);
  if (dnnl) spore::cpu::matmul_dnnl(g);  // warm-up
  for (auto _ : state) {
    if (dnnl) spore::cpu::matmul_dnnl(g);
    else spore::cpu::matmul_direct(g);
    benchmark::DoNotOptimize(c.data_ptr());
  }
  set_flops(state, n, n, n);
}
BENCHMARK(BM_SmallPath)
    ->ArgsProduct({{2, 4, 8, 16, 24, 32, 48, 64}, {0, 1}})
    ->ArgNames({"n", "onednn"});

// End to end through dispatch for the chapter's 2x2 sample size.
void BM_SporeMatmulTiny(benchmark::State& state) {
  const int64_t n = state.range(0);
  spore::set_num_threads(1);
  Tensor a = square<float>(n, 1), b = square<float>(n, 2);
  for (auto _ : state) benchmark::DoNotOptimize(spore::matmul(a, b).data_ptr());
}
BENCHMARK(BM_SporeMatmulTiny)->Arg(2)->Arg(4)->Arg(32)->Arg(64);

}  // namespace

BENCHMARK_MAIN();
