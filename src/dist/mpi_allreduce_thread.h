// The MPI backend's all-reduce thread (NOTE [All-reduce on MPI's blocking path]): one thread that
// runs blocking MPI_Allreduce calls, in the order they were queued, on a communicator of its own.
// Open MPI's blocking all-reduce (coll/tuned) is several times faster on shared memory than the
// non-blocking one (coll/libnbc) for large buffers, but a blocking call never returns to the
// watchdog; run on this thread, it does not have to: the caller waits on a request with a deadline.
// A caller that comes to wait for a call the thread has not started runs it itself, and the
// thread watches the deadline instead (NOTE [The caller runs its own all-reduce]).
#pragma once
#include <mpi.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "spore/dist.h"

namespace spore::dist::detail {

class MpiAllreduceThread {
 public:
  // `comm` must be used by this thread only (collectives on one communicator must be issued in
  // the same order on every rank; the caller's thread keeps its own communicator): a caller that
  // runs a call itself does so while the thread runs none. `cpu`: the CPU the thread keeps to
  // (NOTE [Keeping the ranks' all-reduce threads apart]), or none to float.
  MpiAllreduceThread(MPI_Comm comm, int rank, std::optional<int> cpu);
  ~MpiAllreduceThread();  // stop(): joins
  MpiAllreduceThread(const MpiAllreduceThread&) = delete;
  MpiAllreduceThread& operator=(const MpiAllreduceThread&) = delete;

  // Queues MPI_Allreduce(send or MPI_IN_PLACE when send == recv, recv, count, type, op) and
  // returns its request at once. The buffers must stay alive until the request is done.
  // `caller_waits`: the thread is not woken for it, as the caller's wait will run it (if it is
  // next in line then; else the thread is awake for the calls before it anyway).
  std::unique_ptr<CommRequest> all_reduce(const void* send, void* recv, int count,
                                          MPI_Datatype type, MPI_Op op, bool caller_waits);
  // Finishes the queued calls, then ends the thread. Only for a clean shutdown: with a rank gone
  // a queued call never returns (the group aborts the job instead).
  void stop() noexcept;

  struct Done;  // a request's completion, shared with the thread
  // For the request (ThreadRequest): runs the call of `done` on the calling thread when it is
  // next in line and nothing runs (true), the thread watching `deadline` meanwhile and ending the
  // job with `timeout_message` past it; false when the thread has it (or had it) instead.
  bool run_here(const std::shared_ptr<Done>& done, std::chrono::steady_clock::time_point deadline,
                const std::string& timeout_message);

 private:
  struct Job {
    const void* send;
    void* recv;
    int count;
    MPI_Datatype type;
    MPI_Op op;
    std::shared_ptr<Done> done;
  };
  void loop(std::optional<int> cpu);
  std::string call(const Job& job);                   // the MPI call; its error, if any
  static void complete(const Job& job, std::string error);  // the request is done
  MPI_Comm comm_;
  int rank_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool busy_ = false;  // a call runs on comm_ (on this thread or a caller's)
  // The call a caller runs: its deadline and the message the watchdog gives past it.
  bool caller_running_ = false;
  std::chrono::steady_clock::time_point caller_deadline_;
  std::string caller_timeout_message_;
  // Set once the thread has watched a caller's call: from then on it wakes at least every
  // watch_period_ (the shortest watchdog timeout seen) instead of being woken for each call.
  bool watching_ = false;
  std::chrono::steady_clock::duration watch_period_{};
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace spore::dist::detail
