// The MPI backend (NOTE [Distributed training]): non-blocking MPI collectives on a duplicate of
// MPI_COMM_WORLD, except the all-reduce, which runs Open MPI's blocking MPI_Allreduce on a
// thread of its own where MPI allows threads (NOTE [All-reduce on MPI's blocking path]). Errors
// return (MPI_ERRORS_RETURN) instead of aborting inside the library, and become spore::Error
// (kIO) naming the MPI call, the rank and MPI's own message.
#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "dist/allreduce_thread_cpu.h"
#include "dist/backends.h"
#include "dist/mpi_allreduce_thread.h"
#include "spore/error.h"

namespace spore::dist::detail {

namespace {

std::string mpi_message(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, (size_t)len);
}

void check(int code, const char* call, int rank) {
  if (code == MPI_SUCCESS) return;
  throw Error(ErrorCode::kIO, std::string("dist: ") + call + " failed on rank " +
                                  std::to_string(rank) + ": " + mpi_message(code) +
                                  " (a peer process probably exited; see the other ranks' output)");
}

MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::kBool:
    case DType::kUInt8:
      return MPI_UINT8_T;
    case DType::kInt8:
      return MPI_INT8_T;
    case DType::kInt32:
      return MPI_INT32_T;
    case DType::kInt64:
      return MPI_INT64_T;
    case DType::kFloat16:
    case DType::kBFloat16:
      return MPI_UINT16_T;  // moved as bits; the group reduces them in float32
    case DType::kFloat32:
      return MPI_FLOAT;
    case DType::kFloat64:
      return MPI_DOUBLE;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op mpi_op(ReduceOp op) {
  return op == ReduceOp::kMax ? MPI_MAX : MPI_SUM;
}

// MPI counts are int: a buffer past 2^31 - 1 elements is split by the caller (the buckets are far
// smaller); refuse rather than truncate.
int mpi_count(int64_t count) {
  if (count < 0 || count > INT32_MAX)
    throw Error(ErrorCode::kValue,
                "dist: a collective of " + std::to_string(count) +
                    " elements exceeds MPI's int count; split the tensor (or lower bucket_bytes)");
  return (int)count;
}

// One MPI request.
class MpiRequest final : public CommRequest {
 public:
  MpiRequest(const char* call, int rank) : call_(call), rank_(rank) {}
  MPI_Request* handle() { return &req_; }
  bool test() override {
    if (req_ == MPI_REQUEST_NULL) return true;
    int flag = 0;
    check(MPI_Test(&req_, &flag, MPI_STATUS_IGNORE), call_, rank_);
    return flag != 0;
  }

 private:
  const char* call_;
  int rank_;
  MPI_Request req_ = MPI_REQUEST_NULL;
};

// The rank-order all-reduce: every rank sends its buffer to rank 0, which folds them in rank
// order and sends the result back. Point-to-point messages on a communicator of their own, told
// apart by a tag per request: they match by (source, tag), not by the order calls are made, so
// the second phase may start whenever rank 0's fold is done (collectives would have to be issued
// in the same order on every rank, and when a fold finishes depends on timing).
class RankOrderRequest final : public CommRequest {
 public:
  RankOrderRequest(MPI_Comm comm, int rank, int size, int tag, const void* send, void* recv,
                   int64_t count, DType dtype, ReduceOp op)
      : comm_(comm),
        rank_(rank),
        size_(size),
        tag_(tag),
        recv_(recv),
        count_(count),
        dtype_(dtype),
        op_(op) {
    const size_t bytes = (size_t)count * dtype_size(dtype);
    const int n = mpi_count(count);
    if (rank == 0) {
      if (send != recv) std::memcpy(recv, send, bytes);
      others_.resize(bytes * (size_t)(size - 1));
      reqs_.resize((size_t)(size - 1), MPI_REQUEST_NULL);
      for (int r = 1; r < size; ++r)
        check(MPI_Irecv(others_.data() + bytes * (size_t)(r - 1), n, mpi_type(dtype), r, tag, comm,
                        &reqs_[r - 1]),
              "MPI_Irecv", rank);
    } else {
      // The result arrives in recv while this rank's contribution may still be leaving: keep a
      // copy.
      own_send_.assign((const uint8_t*)send, (const uint8_t*)send + bytes);
      reqs_.assign(2, MPI_REQUEST_NULL);
      check(MPI_Isend(own_send_.data(), n, mpi_type(dtype), 0, tag, comm, &reqs_[0]), "MPI_Isend",
            rank);
      check(MPI_Irecv(recv, n, mpi_type(dtype), 0, tag, comm, &reqs_[1]), "MPI_Irecv", rank);
      phase_ = 1;  // one phase: both requests together
    }
  }
  bool test() override {
    if (done_) return true;
    int flag = 0;
    check(MPI_Testall((int)reqs_.size(), reqs_.data(), &flag, MPI_STATUSES_IGNORE), "MPI_Testall",
          rank_);
    if (!flag) return false;
    if (phase_ == 0) {  // rank 0: every contribution is in; fold in rank order, send the result
      const size_t bytes = (size_t)count_ * dtype_size(dtype_);
      for (int r = 1; r < size_; ++r)
        reduce_into(recv_, others_.data() + bytes * (size_t)(r - 1), count_, dtype_, op_);
      others_.clear();
      for (int r = 1; r < size_; ++r)
        check(MPI_Isend(recv_, mpi_count(count_), mpi_type(dtype_), r, tag_, comm_, &reqs_[r - 1]),
              "MPI_Isend", rank_);
      phase_ = 1;
      return test();
    }
    done_ = true;
    return true;
  }

 private:
  MPI_Comm comm_;
  int rank_, size_, tag_;
  void* recv_;
  int64_t count_;
  DType dtype_;
  ReduceOp op_;
  std::vector<uint8_t> others_, own_send_;
  std::vector<MPI_Request> reqs_;
  int phase_ = 0;
  bool done_ = false;
};

class MpiBackend final : public CommBackend {
 public:
  MpiBackend() {
    int initialized = 0, provided = MPI_THREAD_SINGLE;
    MPI_Initialized(&initialized);
    if (!initialized) {
      // MULTIPLE: the all-reduce thread calls MPI while the caller's thread tests other requests
      // (NOTE [All-reduce on MPI's blocking path]); a library that cannot gives less, and the
      // all-reduce stays non-blocking on the caller's thread.
      if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
        throw Error(ErrorCode::kIO,
                    "dist: MPI_Init_thread failed (is this process started by mpirun?)");
      owns_mpi_ = true;
    } else {
      MPI_Query_thread(&provided);  // the program initialised MPI itself, at a level of its own
    }
    // Errors come back as codes on WORLD too (a failure outside our communicator, e.g. in
    // MPI_Finalize, must not abort inside the library with a message that names nothing).
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup", -1);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    check(MPI_Comm_dup(MPI_COMM_WORLD, &p2p_), "MPI_Comm_dup", -1);
    MPI_Comm_set_errhandler(p2p_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    // SPORE_MPI_ALLREDUCE_THREAD=0 keeps MPI_Iallreduce (to compare the two paths); every rank
    // must see the same value, as MPI_Comm_dup is collective (mpirun passes one environment).
    const char* env = std::getenv("SPORE_MPI_ALLREDUCE_THREAD");
    const bool wanted = !(env && std::string(env) == "0");
    if (provided >= MPI_THREAD_MULTIPLE && wanted && size_ > 1) {
      check(MPI_Comm_dup(MPI_COMM_WORLD, &ar_comm_), "MPI_Comm_dup", rank_);
      MPI_Comm_set_errhandler(ar_comm_, MPI_ERRORS_RETURN);
      ar_thread_ = std::make_unique<MpiAllreduceThread>(ar_comm_, rank_, own_cpu());
    }
  }
  ~MpiBackend() override { finalize(); }

  // The all-reduce thread's CPU (NOTE [Keeping the ranks' all-reduce threads apart]): this rank's
  // place among the ranks of its node (MPI_Comm_split_type, collective: every rank that starts the
  // thread calls it) indexes the CPUs this process may use. SPORE_DIST_PIN_ALLREDUCE_THREAD=0
  // leaves the thread floating (bench/run_dist.py compares the two).
  std::optional<int> own_cpu() {
    MPI_Comm node = MPI_COMM_NULL;
    check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node),
          "MPI_Comm_split_type", rank_);
    int local_rank = 0, local_size = 1;
    MPI_Comm_rank(node, &local_rank);
    MPI_Comm_size(node, &local_size);
    MPI_Comm_free(&node);
    const char* env = std::getenv("SPORE_DIST_PIN_ALLREDUCE_THREAD");
    if (env && std::string(env) == "0") return std::nullopt;
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return std::nullopt;
    return allreduce_thread_cpu(allowed, local_rank, local_size);
  }

  const char* name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::unique_ptr<CommRequest> all_reduce(const void* send, void* recv, int64_t count, DType dtype,
                                          ReduceOp op, bool in_rank_order,
                                          bool caller_waits) override {
    if (in_rank_order) {
      // Requests are made in the same order on every rank, so the n-th one has the same tag
      // everywhere; tags wrap at 32767 (the least MPI_TAG_UB MPI allows), far more than can be
      // in flight at once.
      const int tag = (int)(p2p_tickets_++ % 32767);
      return std::make_unique<RankOrderRequest>(p2p_, rank_, size_, tag, send, recv, count, dtype,
                                                op);
    }
    if (ar_thread_)
      return ar_thread_->all_reduce(send, recv, mpi_count(count), mpi_type(dtype), mpi_op(op),
                                    caller_waits);
    auto r = std::make_unique<MpiRequest>("MPI_Iallreduce", rank_);
    check(MPI_Iallreduce(send == recv ? MPI_IN_PLACE : send, recv, mpi_count(count),
                         mpi_type(dtype), mpi_op(op), comm_, r->handle()),
          "MPI_Iallreduce", rank_);
    return r;
  }
  std::unique_ptr<CommRequest> broadcast(void* buf, int64_t count, DType dtype, int root) override {
    auto r = std::make_unique<MpiRequest>("MPI_Ibcast", rank_);
    check(MPI_Ibcast(buf, mpi_count(count), mpi_type(dtype), root, comm_, r->handle()),
          "MPI_Ibcast", rank_);
    return r;
  }
  std::unique_ptr<CommRequest> all_gather(const void* send, void* recv, int64_t count,
                                          DType dtype) override {
    auto r = std::make_unique<MpiRequest>("MPI_Iallgather", rank_);
    check(MPI_Iallgather(send, mpi_count(count), mpi_type(dtype), recv, mpi_count(count),
                         mpi_type(dtype), comm_, r->handle()),
          "MPI_Iallgather", rank_);
    return r;
  }
  std::unique_ptr<CommRequest> reduce_scatter(const void* send, void* recv, int64_t count,
                                              DType dtype, ReduceOp op) override {
    auto r = std::make_unique<MpiRequest>("MPI_Ireduce_scatter_block", rank_);
    check(MPI_Ireduce_scatter_block(send, recv, mpi_count(count), mpi_type(dtype), mpi_op(op),
                                    comm_, r->handle()),
          "MPI_Ireduce_scatter_block", rank_);
    return r;
  }
  std::unique_ptr<CommRequest> barrier() override {
    auto r = std::make_unique<MpiRequest>("MPI_Ibarrier", rank_);
    check(MPI_Ibarrier(comm_, r->handle()), "MPI_Ibarrier", rank_);
    return r;
  }
  void abort(int exit_code) noexcept override { MPI_Abort(MPI_COMM_WORLD, exit_code); }
  void finalize() noexcept override {
    if (ar_thread_) ar_thread_->stop();
    ar_thread_.reset();
    if (ar_comm_ != MPI_COMM_NULL) MPI_Comm_free(&ar_comm_);
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
    if (p2p_ != MPI_COMM_NULL) MPI_Comm_free(&p2p_);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owns_mpi_ && !finalized) MPI_Finalize();
    owns_mpi_ = false;
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm p2p_ = MPI_COMM_NULL;  // the rank-order all-reduce's messages
  MPI_Comm ar_comm_ = MPI_COMM_NULL;  // the all-reduce thread's own
  std::unique_ptr<MpiAllreduceThread> ar_thread_;
  uint64_t p2p_tickets_ = 0;
  int rank_ = 0, size_ = 1;
  bool owns_mpi_ = false;
};

}  // namespace

std::unique_ptr<CommBackend> make_mpi_backend() {
  return std::make_unique<MpiBackend>();
}

}  // namespace spore::dist::detail
