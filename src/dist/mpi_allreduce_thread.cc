// The all-reduce thread of the MPI backend (NOTE [All-reduce on MPI's blocking path], NOTE [The
// caller runs its own all-reduce]).
#include "dist/mpi_allreduce_thread.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstdio>

#include "spore/error.h"

namespace spore::dist::detail {

struct MpiAllreduceThread::Done {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::string error;  // MPI's failure, rethrown on the waiting thread
};

namespace {

class ThreadRequest final : public CommRequest {
 public:
  ThreadRequest(MpiAllreduceThread* owner, std::shared_ptr<MpiAllreduceThread::Done> d)
      : owner_(owner), d_(std::move(d)) {}
  bool test() override {
    std::lock_guard<std::mutex> lock(d_->mu);
    return finished();
  }
  void set_timeout_message(const std::string& message) override { timeout_message_ = message; }
  bool wait_until(std::chrono::steady_clock::time_point deadline) override {
    // A call nobody has started yet is run here: no hand-off to the thread and back (two
    // wake-ups, each a chance for the scheduler to run something else first). A finished call
    // never reaches the thread object: after stop() (which finishes every queued call) it is gone.
    {
      std::lock_guard<std::mutex> lock(d_->mu);
      if (d_->done) return finished();
    }
    if (owner_->run_here(d_, deadline, timeout_message_)) {
      std::lock_guard<std::mutex> lock(d_->mu);
      return finished();
    }
    std::unique_lock<std::mutex> lock(d_->mu);
    d_->cv.wait_until(lock, deadline, [this] { return d_->done; });
    return finished();
  }

 private:
  bool finished() const {
    if (d_->done && !d_->error.empty()) throw Error(ErrorCode::kIO, d_->error);
    return d_->done;
  }
  MpiAllreduceThread* owner_;
  std::shared_ptr<MpiAllreduceThread::Done> d_;
  std::string timeout_message_ = "dist: an all_reduce did not complete within the watchdog timeout";
};

}  // namespace

MpiAllreduceThread::MpiAllreduceThread(MPI_Comm comm, int rank, std::optional<int> cpu)
    : comm_(comm), rank_(rank), thread_([this, cpu] { loop(cpu); }) {}

MpiAllreduceThread::~MpiAllreduceThread() {
  stop();
}

std::unique_ptr<CommRequest> MpiAllreduceThread::all_reduce(const void* send, void* recv,
                                                            int count, MPI_Datatype type,
                                                            MPI_Op op, bool caller_waits) {
  auto done = std::make_shared<Done>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_)
      throw Error(ErrorCode::kValue, "dist: all_reduce after the MPI backend was finalized");
    jobs_.push_back(Job{send, recv, count, type, op, done});
  }
  if (!caller_waits) cv_.notify_one();
  return std::make_unique<ThreadRequest>(this, std::move(done));
}

bool MpiAllreduceThread::run_here(const std::shared_ptr<Done>& done,
                                  std::chrono::steady_clock::time_point deadline,
                                  const std::string& timeout_message) {
  Job job;
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (busy_ || jobs_.empty() || jobs_.front().done != done) return false;
    job = std::move(jobs_.front());
    jobs_.pop_front();
    busy_ = true;
    caller_running_ = true;
    caller_deadline_ = deadline;
    caller_timeout_message_ = timeout_message;
    const auto period = std::max<std::chrono::steady_clock::duration>(
        deadline - std::chrono::steady_clock::now(), std::chrono::milliseconds(1));
    if (watch_period_ == std::chrono::steady_clock::duration::zero() || period < watch_period_)
      watch_period_ = period;
    wake = !watching_;
  }
  // The thread watches this call's deadline. Once it has watched one it never sleeps longer than
  // a watchdog period, so it finds each later call without being woken for it (a wake-up per
  // call is a context switch the blocking path exists to avoid).
  if (wake) cv_.notify_one();
  std::string error = call(job);
  bool more = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    busy_ = false;
    caller_running_ = false;
    more = !jobs_.empty();
  }
  complete(job, std::move(error));
  if (more) cv_.notify_one();  // calls queued behind this one: the thread runs them now
  return true;
}

void MpiAllreduceThread::stop() noexcept {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

std::string MpiAllreduceThread::call(const Job& job) {
  const int rc = MPI_Allreduce(job.send == job.recv ? MPI_IN_PLACE : job.send, job.recv,
                               job.count, job.type, job.op, comm_);
  std::string error;
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    error = "dist: MPI_Allreduce failed on rank " + std::to_string(rank_) + ": " +
            std::string(text, (size_t)len) +
            " (a peer process probably exited; see the other ranks' output)";
  }
  return error;
}

// After busy_ is cleared: a waiter woken here may queue its next blocking call at once and must
// find the communicator free to run it itself.
void MpiAllreduceThread::complete(const Job& job, std::string error) {
  {
    std::lock_guard<std::mutex> lock(job.done->mu);
    job.done->done = true;
    job.done->error = std::move(error);
  }
  job.done->cv.notify_all();
}

void MpiAllreduceThread::loop(std::optional<int> cpu) {
  // NOTE [Keeping the ranks' all-reduce threads apart]: this thread sleeps between calls, and each
  // wake-up lets the scheduler place it anew; two ranks' threads placed on one CPU wait for each
  // other a time slice per message. A CPU of its own per local rank rules that out. Failure (a
  // CPU the container forbids after all) leaves the thread floating, as before.
  if (cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(*cpu, &set);
    (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  }
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (!busy_ && !jobs_.empty()) {
      Job job = std::move(jobs_.front());
      jobs_.pop_front();
      busy_ = true;
      lock.unlock();
      std::string error = call(job);
      lock.lock();
      busy_ = false;
      lock.unlock();
      complete(job, std::move(error));
      lock.lock();
      continue;
    }
    if (stopping_ && jobs_.empty() && !busy_) return;
    const auto now = std::chrono::steady_clock::now();
    const auto runnable = [this] { return !busy_ && (stopping_ || !jobs_.empty()); };
    if (caller_running_) {
      // The watchdog of a call a caller runs: that thread is inside MPI and cannot come back to
      // raise the timeout, so past the deadline this one reports it and ends the job (what the
      // group does anyway once a collective has timed out: finalize() aborts).
      if (now >= caller_deadline_) {
        std::fprintf(stderr, "rank %d: dist watchdog, ending the job: %s\n", rank_,
                     caller_timeout_message_.c_str());
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 3);
      }
      watching_ = true;
      cv_.wait_until(lock, caller_deadline_, runnable);
    } else if (watching_) {
      cv_.wait_until(lock, now + watch_period_, runnable);
    } else {
      cv_.wait(lock, [this] { return stopping_ || caller_running_ || (!busy_ && !jobs_.empty()); });
    }
  }
}

}  // namespace spore::dist::detail
