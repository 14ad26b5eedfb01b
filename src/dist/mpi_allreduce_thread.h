// The MPI backend's all-reduce thread (NOTE [All-reduce on MPI's blocking path]): one thread that
// runs blocking MPI_Allreduce calls, in the order they were queued, on a communicator of its own.
// Open MPI's blocking all-reduce (coll/tuned) is several times faster on shared memory than the
// non-blocking one (coll/libnbc) for large buffers, but a blocking call never returns to the
// watchdog; run on this thread, it does not have to: the caller waits on a request with a deadline.
#pragma once
#include <mpi.h>

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "spore/dist.h"

namespace spore::dist::detail {

class MpiAllreduceThread {
 public:
  // `comm` must be used by this thread only (collectives on one communicator must be issued in
  // the same order on every rank; the caller's thread keeps its own communicator).
  MpiAllreduceThread(MPI_Comm comm, int rank);
  ~MpiAllreduceThread();  // stop(): joins
  MpiAllreduceThread(const MpiAllreduceThread&) = delete;
  MpiAllreduceThread& operator=(const MpiAllreduceThread&) = delete;

  // Queues MPI_Allreduce(send or MPI_IN_PLACE when send == recv, recv, count, type, op) and
  // returns its request at once. The buffers must stay alive until the request is done.
  std::unique_ptr<CommRequest> all_reduce(const void* send, void* recv, int count,
                                          MPI_Datatype type, MPI_Op op);
  // Finishes the queued calls, then ends the thread. Only for a clean shutdown: with a rank gone
  // a queued call never returns (the group aborts the job instead).
  void stop() noexcept;

  struct Done;  // a request's completion, shared with the thread

 private:
  struct Job {
    const void* send;
    void* recv;
    int count;
    MPI_Datatype type;
    MPI_Op op;
    std::shared_ptr<Done> done;
  };
  void loop();
  MPI_Comm comm_;
  int rank_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace spore::dist::detail
