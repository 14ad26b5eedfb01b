// Where the calling thread stands relative to the pool (NOTE [Threads that sleep] in
// thread_pool.cc), for code that must not start a second level of threads inside a pool chunk.
#pragma once
#include <cstdint>

namespace spore::cpu {

// True inside a parallel_for chunk (or an OpenMP region): loops started here run serially.
bool in_parallel_region();

// The OpenMP team size a oneDNN call of `macs` multiply-adds from this thread may use: 1 inside a
// pool chunk (so nested parallelism never multiplies the threads) and for a problem under
// kSerialOneDnnMacs, pool_threads() elsewhere. Idle OpenMP workers sleep (NOTE [Threads that
// sleep]), and waking one costs tens of microseconds: silero-vad's small LSTM and convolution
// products ran 0.8 ms per prediction at two threads against 0.1 ms at one.
inline constexpr int64_t kSerialOneDnnMacs = int64_t{1} << 20;
int onednn_threads(int64_t macs);

// NOTE [oneDNN on the pool]: `extent` cut into one slab per thread, each `align`-multiple wide (the
// last may be narrower): slab i covers [i * step, min(extent, (i + 1) * step)). The cut depends on
// the extent and the thread count only, so a result never depends on which thread ran a slab.
struct Slabs {
  int64_t step, count;
  int64_t width(int64_t i, int64_t extent) const { return extent - i * step < step ? extent - i * step : step; }
};
inline Slabs cut_into_slabs(int64_t extent, int threads, int64_t align) {
  const int64_t share = (extent + threads - 1) / threads;
  const int64_t step = (share + align - 1) / align * align;
  return {step, (extent + step - 1) / step};
}

}  // namespace spore::cpu
