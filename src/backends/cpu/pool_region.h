// Where the calling thread stands relative to the pool (NOTE [Threads that sleep] in
// thread_pool.cc), for code that must not start a second level of threads inside a pool chunk.
#pragma once

namespace spore::cpu {

// True inside a parallel_for chunk (or an OpenMP region): loops started here run serially.
bool in_parallel_region();

// The OpenMP team size a oneDNN call from this thread may use: 1 inside a pool chunk (so nested
// parallelism never multiplies the threads), pool_threads() elsewhere.
int onednn_threads();

}  // namespace spore::cpu
