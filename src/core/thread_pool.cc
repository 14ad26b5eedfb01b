#include "thread_pool.h"

#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace spore::cpu {

namespace {

int hardware_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : (int)n;
}

// One job at a time: workers wait on a generation counter, take chunks from an atomic index
// and the caller joins in, then waits for the last chunk to finish.
class Pool {
 public:
  explicit Pool(int threads) { resize(threads); }
  ~Pool() { stop_workers(); }

  int threads() const { return threads_; }

  void resize(int threads) {
    if (threads < 1) threads = hardware_threads();
    std::lock_guard<std::mutex> run_lock(run_mu_);
    stop_workers();
    threads_ = threads;
    stop_ = false;
    for (int i = 0; i + 1 < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
  }

  void run(int64_t chunks, const std::function<void(int64_t)>& chunk_fn) {
    std::lock_guard<std::mutex> run_lock(run_mu_);  // one parallel region at a time
    uint64_t gen;
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_ = &chunk_fn;
      num_chunks_ = chunks;
      pending_ = chunks;
      error_ = nullptr;
      gen = ++generation_;
      cursor_.store(gen << 32);
    }
    cv_.notify_all();
    work(gen);
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [&] { return pending_ == 0; });
    job_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

 private:
  // cursor_ packs (generation << 32 | next chunk): a worker that woke late for an earlier job
  // sees another generation and takes nothing, so no chunk runs twice or is skipped.
  bool take(uint64_t gen, int64_t& chunk) {
    uint64_t v = cursor_.load();
    for (;;) {
      if ((v >> 32) != (gen & 0xffffffffu)) return false;
      int64_t c = (int64_t)(v & 0xffffffffu);
      if (c >= num_chunks_.load()) return false;
      if (cursor_.compare_exchange_weak(v, v + 1)) {
        chunk = c;
        return true;
      }
    }
  }

  void work(uint64_t gen) {
    int64_t done = 0, c = 0;
    const auto* job = job_.load();
    while (take(gen, c)) {
      try {
        (*job)(c);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu_);
        if (!error_) error_ = std::current_exception();
      }
      ++done;
    }
    if (done) {
      std::lock_guard<std::mutex> lock(mu_);
      pending_ -= done;
      if (pending_ == 0) done_cv_.notify_all();
    }
  }

  void worker_loop() {
    in_pool_ = true;
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || (generation_ != seen && job_ != nullptr); });
        if (stop_) return;
        seen = generation_;
      }
      work(seen);
    }
  }

  void stop_workers() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
  }

 public:
  static thread_local bool in_pool_;

 private:
  std::mutex run_mu_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::vector<std::thread> workers_;
  // Atomics: a worker that woke late for a finished job may still read them.
  std::atomic<const std::function<void(int64_t)>*> job_{nullptr};
  std::atomic<int64_t> num_chunks_{0};
  std::atomic<uint64_t> cursor_{0};
  int64_t pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
  int threads_ = 1;
  std::exception_ptr error_;
};

thread_local bool Pool::in_pool_ = false;
thread_local bool t_in_parallel = false;

Pool& pool() {
  static Pool* p = new Pool(0);  // leaked: workers must outlive static destructors
  return *p;
}

}  // namespace

int pool_threads() { return pool().threads(); }
void set_pool_threads(int n) {
  if (n < 1) n = hardware_threads();
  if (n != pool().threads()) pool().resize(n);
}

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  int threads = pool_threads();
  if (threads == 1 || n <= grain || t_in_parallel || Pool::in_pool_) {
    fn(0, n);
    return;
  }
  // Chunks: a few per thread for balance, never smaller than the grain.
  int64_t max_chunks = (n + grain - 1) / grain;
  int64_t chunks = std::min<int64_t>(max_chunks, (int64_t)threads * 4);
  int64_t per = (n + chunks - 1) / chunks;
  chunks = (n + per - 1) / per;
  t_in_parallel = true;
  try {
    pool().run(chunks, [&](int64_t c) {
      int64_t b = c * per, e = std::min(n, b + per);
      fn(b, e);
    });
  } catch (...) {
    t_in_parallel = false;
    throw;
  }
  t_in_parallel = false;
}

}  // namespace spore::cpu
