// NOTE [One set of threads]
// parallel_for runs on OpenMP (libgomp), the runtime Debian's oneDNN already uses for matmul and
// convolution. With a pool of its own, Spore had two sets of threads on the same cores: after
// each oneDNN call libgomp's workers spin for a while waiting for the next region, and our
// workers' chunks queued behind them. Profiles of a training step showed three quarters of the
// CPU time in that spinning. On one runtime the same workers run both, and the spin becomes
// useful: a worker that just finished a GEMM picks up the next elementwise region at once.
// Nested regions run serially on the calling thread (a kernel called inside a parallel_for).
#include "thread_pool.h"

#include "signal_mask.h"
#include "spore/context.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

namespace spore::cpu {

namespace {

int hardware_threads() {
  static const int n = [] {
    unsigned c = std::thread::hardware_concurrency();
    return c == 0 ? 1 : (int)c;
  }();
  return n;
}

thread_local bool t_in_parallel = false;

}  // namespace

// The count is the calling thread's setting (NOTE [Context scopes]): a server thread that scopes
// num_threads = 1 runs its kernels serially while another thread uses every core.
int pool_threads() {
  const int n = context().num_threads;
  return n > 0 ? n : hardware_threads();
}

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  const int threads = pool_threads();
  if (threads == 1 || n <= grain || t_in_parallel || omp_in_parallel()) {
    fn(0, n);
    return;
  }
  // Chunks: a few per thread for balance, never smaller than the grain. Their boundaries depend
  // on n, grain and the thread count only; which thread runs a chunk is decided at run time.
  const int64_t max_chunks = (n + grain - 1) / grain;
  int64_t chunks = std::min<int64_t>(max_chunks, (int64_t)threads * 4);
  const int64_t per = (n + chunks - 1) / chunks;
  chunks = (n + per - 1) / per;
  const int team = (int)std::min<int64_t>(threads, chunks);

  std::atomic<int64_t> next{0};
  std::exception_ptr error;
  std::mutex error_mu;
#pragma omp parallel num_threads(team)
  {
    if (omp_get_thread_num() != 0) block_signals_for_good();  // a worker (NOTE [Signals and kernels])
    t_in_parallel = true;
    for (int64_t c; (c = next.fetch_add(1, std::memory_order_relaxed)) < chunks;) {
      try {
        const int64_t b = c * per;
        fn(b, std::min(n, b + per));
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!error) error = std::current_exception();
      }
    }
    t_in_parallel = false;
  }
  if (error) std::rethrow_exception(error);
}

// Workers libgomp made for another library's region (NumPy's OpenMP BLAS, PyTorch) before Spore
// ran here may still take signals; oneDNN's regions reuse them. Later pool growth is covered:
// Spore's regions block signals in their workers, and oneDNN's run with the caller's signals held.
void shield_openmp_team() {
  thread_local int shielded = 1;  // the largest team this thread has shielded
  const int threads = omp_get_max_threads();
  if (threads <= shielded || omp_in_parallel()) return;
#pragma omp parallel num_threads(threads)
  {
    if (omp_get_thread_num() != 0) block_signals_for_good();
  }
  shielded = threads;
}

}  // namespace spore::cpu
