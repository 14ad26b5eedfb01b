// The CPU thread pool: parallel_for over an index range, run by the calling thread plus
// (num_threads - 1) persistent workers.
#pragma once
#include <cstdint>
#include <functional>

namespace spore::cpu {

// Calls fn(begin, end) over disjoint chunks covering [0, n). Chunks hold at least `grain`
// indices, so small ranges stay on the calling thread (no wake-up cost). Nested calls run
// serially on the calling thread. Exceptions thrown by fn are rethrown on the caller.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

// Number of threads parallel_for uses: the calling thread's context().num_threads, 0 = core count.
int pool_threads();

// Makes the workers of an OpenMP team of omp_get_max_threads() threads started from this thread
// block asynchronous signals (NOTE [Signals and kernels], signal_mask.h): an empty region the
// first time this thread asks for a team that size, nothing after. Called before oneDNN runs.
void shield_openmp_team();

}  // namespace spore::cpu
