// Elementwise benchmarks:
//  * BM_EagerAdd2x2: the cost of one eager `a + b` on 2x2 float32 through the public API, a new
//    result tensor each call: what dispatch costs when the arithmetic is free. Target <= 0.25 us.
//  * BM_Triad vs BM_EagerMulAdd: `a * b + c` over 64 Mi float32 as Spore runs it eagerly (mul, then
//    add: 6 arrays of traffic: mul reads a and b and writes t, add reads t and c and writes the
//    result) against a plain triad loop a[i] = b[i] * s + c[i] (3 arrays),
//    both on 2 threads. bytes_per_second counts the arrays each really moves, so the ratio of the
//    two bandwidths is the figure of merit (target >= 0.8).
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "backends/cpu/thread_pool.h"
#include "spore/context.h"
#include "spore/ops.h"

namespace spore {
namespace {

void BM_EagerAdd2x2(benchmark::State& state) {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, Shape{2, 2});
  Tensor b = Tensor::from_vector<float>({5, 6, 7, 8}, Shape{2, 2});
  for (auto _ : state) {
    Tensor c = a + b;
    benchmark::DoNotOptimize(c.impl());
  }
}
BENCHMARK(BM_EagerAdd2x2);

void BM_EagerAddScalar(benchmark::State& state) {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, Shape{2, 2});
  for (auto _ : state) {
    Tensor c = a + 2.0;
    benchmark::DoNotOptimize(c.impl());
  }
}
BENCHMARK(BM_EagerAddScalar);

constexpr int64_t kBig = int64_t{64} << 20;  // 64 Mi elements, 256 MiB per array

void BM_Triad(benchmark::State& state) {
  set_num_threads(2);
  Tensor a = full({kBig}, 0.f), b = full({kBig}, 1.5f), c = full({kBig}, 2.f);
  float* pa = a.data<float>();
  const float* pb = b.data<float>();
  const float* pc = c.data<float>();
  const float s = 3.f;
  for (auto _ : state) {
    cpu::parallel_for(kBig, 32768, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) pa[i] = pb[i] * s + pc[i];
    });
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kBig * 4 * 3);
}
BENCHMARK(BM_Triad)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

void BM_EagerMulAdd(benchmark::State& state) {
  set_num_threads(2);
  Tensor a = full({kBig}, 1.5f), b = full({kBig}, 3.f), c = full({kBig}, 2.f);
  for (auto _ : state) {
    Tensor out = a * b + c;
    benchmark::DoNotOptimize(out.impl());
  }
  state.SetBytesProcessed(state.iterations() * kBig * 4 * 6);  // a, b, t written; t, c read, out
}
BENCHMARK(BM_EagerMulAdd)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

}  // namespace
}  // namespace spore

BENCHMARK_MAIN();
