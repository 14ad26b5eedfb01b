// The all-reduce thread of the MPI backend (NOTE [All-reduce on MPI's blocking path]).
#include "dist/mpi_allreduce_thread.h"

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
  explicit ThreadRequest(std::shared_ptr<MpiAllreduceThread::Done> d) : d_(std::move(d)) {}
  bool test() override {
    std::lock_guard<std::mutex> lock(d_->mu);
    return finished();
  }
  bool wait_until(std::chrono::steady_clock::time_point deadline) override {
    std::unique_lock<std::mutex> lock(d_->mu);
    d_->cv.wait_until(lock, deadline, [this] { return d_->done; });
    return finished();
  }

 private:
  bool finished() const {
    if (d_->done && !d_->error.empty()) throw Error(ErrorCode::kIO, d_->error);
    return d_->done;
  }
  std::shared_ptr<MpiAllreduceThread::Done> d_;
};

}  // namespace

MpiAllreduceThread::MpiAllreduceThread(MPI_Comm comm, int rank)
    : comm_(comm), rank_(rank), thread_([this] { loop(); }) {}

MpiAllreduceThread::~MpiAllreduceThread() {
  stop();
}

std::unique_ptr<CommRequest> MpiAllreduceThread::all_reduce(const void* send, void* recv,
                                                            int count, MPI_Datatype type,
                                                            MPI_Op op) {
  auto done = std::make_shared<Done>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_)
      throw Error(ErrorCode::kValue, "dist: all_reduce after the MPI backend was finalized");
    jobs_.push_back(Job{send, recv, count, type, op, done});
  }
  cv_.notify_one();
  return std::make_unique<ThreadRequest>(std::move(done));
}

void MpiAllreduceThread::stop() noexcept {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void MpiAllreduceThread::loop() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, and nothing left to run
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
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
    {
      std::lock_guard<std::mutex> lock(job.done->mu);
      job.done->done = true;
      job.done->error = std::move(error);
    }
    job.done->cv.notify_all();
  }
}

}  // namespace spore::dist::detail
