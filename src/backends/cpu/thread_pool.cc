// NOTE [Threads that sleep]
// parallel_for runs on Spore's own pool: persistent workers that, between regions, spin on an
// atomic for a bounded number of pause instructions (a few microseconds of CPU at most, so
// back-to-back regions of one token stay cheap) and then sleep on a condition variable. It used
// to run on OpenMP (libgomp), whose idle workers spin for as long as OMP_WAIT_POLICY says, and
// libgomp reads that variable once, when it is loaded, before any constructor of ours can run
// (it is our dependency; a setenv in .preinit_array is undone when libc initialises environ), so
// only a command that re-executed itself could choose. With its own pool the library behaves the
// same in every command and every program that links it.
// * Chunks are claimed from an atomic counter, by the caller too: a worker the OS has not
//   scheduled yet simply claims nothing, so a busy machine slows a region down by the missing
//   core, never by a barrier waiting for a descheduled thread.
// * One region at a time: a second thread calling parallel_for while a region runs (a server's
//   HTTP thread beside the engine) runs its loop serially, and nested calls (a kernel inside a
//   parallel_for chunk) run serially on their thread; the pool never holds more than
//   num_threads - 1 busy workers, so nothing oversubscribes the cores.
// * oneDNN still parallelises on libgomp (Debian's build has no other runtime): inside a pool
//   chunk it gets one thread (oneDNN_threads()), outside it the caller's count; the CLI runs
//   libgomp passive (NOTE [Passive OpenMP in the CLI], tools/spore/main.cc).
#include "thread_pool.h"

#include "pool_region.h"

#include <pthread.h>

#include "signal_mask.h"
#include "spore/context.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

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

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Pause instructions an idle worker spins through before it sleeps: ~10-150 ns each, so a few
// hundred microseconds of CPU at most, whatever the load.
constexpr int kSpinPauses = 4096;

class Pool {
 public:
  static Pool& get() { return *instance(); }

  // Never destroyed: workers may still be waiting when static destructors run. A forked child
  // has none of the parent's workers, and waking the condition variable they wait on could block
  // it (glibc waits for the old waiters to leave): the child starts a fresh pool.
  static Pool*& instance() {
    static Pool* p = [] {
      pthread_atfork(nullptr, nullptr, [] { instance() = new Pool; });
      return new Pool;
    }();
    return p;
  }

  // Runs chunks [0, chunks) of fn with up to `team` threads, the caller included. False when
  // another region is running (the caller then runs its loop serially). A region is running from
  // here until its last helper has left work(), not just while it is open: a second caller that
  // took the pool once the first had closed its region, but before that region's helpers had
  // left, would reset next_, fn_ and chunks_ under their feet, and the first caller's clean-up
  // (fn_ = nullptr) would land in the second's region (a worker then called a null function:
  // the segfault of two models' engines stepping at once in `spore serve`).
  bool run(int team, int64_t n, int64_t per, int64_t chunks, const std::function<void(int64_t, int64_t)>& fn) {
    std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
    if (!lock.owns_lock() || busy_) return false;
    grow(team - 1);
    busy_ = true;
    fn_ = &fn;
    n_ = n;
    per_ = per;
    chunks_ = chunks;
    next_.store(0, std::memory_order_relaxed);
    helpers_wanted_ = team - 1;
    helpers_joined_ = 0;
    error_ = nullptr;
    open_ = true;
    generation_.fetch_add(1, std::memory_order_release);
    const bool wake = sleepers_ > 0;
    lock.unlock();
    if (wake) wake_cv_.notify_all();
    work();
    lock.lock();
    open_ = false;  // no worker enters now; wait for those inside to finish their chunk
    lock.unlock();
    for (int i = 0; i < kSpinPauses && helpers_in_.load(std::memory_order_acquire) != 0; ++i) cpu_relax();
    lock.lock();
    done_cv_.wait(lock, [&] { return helpers_in_.load(std::memory_order_acquire) == 0; });
    std::exception_ptr e = error_;
    error_ = nullptr;
    fn_ = nullptr;
    busy_ = false;
    lock.unlock();
    if (e) std::rethrow_exception(e);
    return true;
  }

 private:
  void grow(int workers) {  // with mu_ held
    while ((int)threads_.size() < workers) threads_.emplace_back([this] { loop(); });
  }

  // Claims and runs chunks until none is left.
  void work() {
    for (int64_t c; (c = next_.fetch_add(1, std::memory_order_relaxed)) < chunks_;) {
      try {
        const int64_t b = c * per_;
        (*fn_)(b, std::min(n_, b + per_));
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu_);
        if (!error_) error_ = std::current_exception();
      }
    }
  }

  void loop() {
    block_signals_for_good();  // NOTE [Signals and kernels]
    pthread_setname_np(pthread_self(), "spore-pool");
    t_in_parallel = true;  // anything a worker runs is inside a region: nested loops stay serial
    uint64_t seen = generation_.load(std::memory_order_acquire);
    for (;;) {
      // Bounded spin, then sleep until the next region opens.
      uint64_t g = seen;
      for (int i = 0; i < kSpinPauses && (g = generation_.load(std::memory_order_acquire)) == seen; ++i) cpu_relax();
      std::unique_lock<std::mutex> lock(mu_);
      if (g == seen) {
        ++sleepers_;
        wake_cv_.wait(lock, [&] { return generation_.load(std::memory_order_relaxed) != seen; });
        --sleepers_;
      }
      seen = generation_.load(std::memory_order_relaxed);
      if (!open_ || helpers_joined_ >= helpers_wanted_) continue;
      ++helpers_joined_;
      helpers_in_.fetch_add(1, std::memory_order_relaxed);
      lock.unlock();
      work();
      if (helpers_in_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        lock.lock();  // the caller checks helpers_in_ under the lock before it sleeps
        done_cv_.notify_one();
      }
    }
  }

  std::mutex mu_;
  std::condition_variable wake_cv_, done_cv_;
  std::vector<std::thread> threads_;
  std::atomic<uint64_t> generation_{0};
  int sleepers_ = 0;
  // The region (with mu_ held, but next_, which the chunks race for). busy_: a caller is inside
  // run(); open_: helpers may still join.
  bool busy_ = false, open_ = false;
  int helpers_wanted_ = 0, helpers_joined_ = 0;
  std::atomic<int> helpers_in_{0};  // workers inside work() now
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0, per_ = 1, chunks_ = 0;
  std::atomic<int64_t> next_{0};
  std::exception_ptr error_;
};

}  // namespace

// The count is the calling thread's setting (NOTE [Context scopes]): a server thread that scopes
// num_threads = 1 runs its kernels serially while another thread uses every core.
int pool_threads() {
  const int n = context().num_threads;
  return n > 0 ? n : hardware_threads();
}

bool in_parallel_region() { return t_in_parallel || omp_in_parallel(); }

int onednn_threads(int64_t macs) { return in_parallel_region() || macs < kSerialOneDnnMacs ? 1 : pool_threads(); }

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  const int threads = pool_threads();
  if (threads == 1 || n <= grain || in_parallel_region()) {
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
  t_in_parallel = true;
  struct Reset {
    ~Reset() { t_in_parallel = false; }
  } reset;
  if (!Pool::get().run(team, n, per, chunks, fn)) {
    for (int64_t c = 0; c < chunks; ++c) fn(c * per, std::min(n, c * per + per));
  }
}

// Workers libgomp made for another library's region (NumPy's OpenMP BLAS, PyTorch) before Spore
// ran here may still take signals; oneDNN's regions reuse them. Later pool growth is covered:
// oneDNN's regions run with the caller's signals held, and workers created then inherit the mask.
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
