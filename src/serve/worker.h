// The model worker: one thread owns the Engine and runs its steps; each step batches every active
// sequence (continuous batching: jobs join and leave between steps). HTTP threads submit jobs
// and read their events; a job cancelled (client gone) leaves the engine at the next loop turn.
#pragma once
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "serve/metrics.h"
#include "spore/nlp/generate.h"

namespace spore::serve {

struct Job {
  Job(std::vector<int32_t> prompt, nlp::GenerateOptions options) : prompt(std::move(prompt)), options(std::move(options)) {}
  const std::vector<int32_t> prompt;
  const nlp::GenerateOptions options;

  // Filled by the worker; read under mu.
  std::mutex mu;
  std::condition_variable cv;
  std::deque<nlp::SequenceEvent> events;
  bool done = false;
  nlp::Timings timings;
  int64_t generated = 0;

  // Waits up to `timeout_ms` for events; moves them out. Returns whether the job is done (all
  // events delivered).
  bool take(std::vector<nlp::SequenceEvent>& out, int timeout_ms);

  // The client's socket, asked by the worker when the job leaves the queue for a slot (NOTE
  // [Server], "Disconnects"): a client that left while queued costs no prefill. The HTTP side
  // sets it before submitting and releases it before it lets go of the connection (after that
  // httplib may close the socket and the number may be reused).
  void watch_peer(int fd);
  void release_peer();
  bool peer_gone();  // false when no socket is watched

 private:
  std::mutex peer_mu_;
  int peer_fd_ = -1;
};

class Worker {
 public:
  Worker(const nlp::LoadedModel& model, const nlp::EngineOptions& options, int64_t queue_limit, Metrics& metrics);
  ~Worker();
  // False when slots and queue are full (the caller answers 503).
  bool submit(const std::shared_ptr<Job>& job);
  void cancel(const std::shared_ptr<Job>& job);
  Gauges gauges() const;
  int64_t context() const { return context_; }
  // The engine's memory report (weights, KV cache, scratch), taken when the worker was made.
  const nlp::MemoryReport& memory() const { return memory_; }

 private:
  void loop();
  void finish(const std::shared_ptr<Job>& job, const nlp::Timings* t);

  nlp::Engine engine_;
  Metrics& metrics_;
  const int64_t capacity_;  // slots + queue
  const int64_t context_, slots_;
  const uint64_t kv_bytes_;
  const nlp::MemoryReport memory_;
  const bool prefix_cache_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> incoming_;
  std::vector<std::shared_ptr<Job>> cancels_;
  std::map<uint64_t, std::shared_ptr<Job>> running_;  // by sequence id (in the engine: active or queued)
  int64_t in_flight_ = 0;                             // submitted and not done
  int64_t active_ = 0, queued_ = 0, kv_used_ = 0;     // as of the last step
  int64_t prefix_held_ = 0;                           // rows free slots keep for reuse
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace spore::serve
