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

}  // namespace spore::cpu
