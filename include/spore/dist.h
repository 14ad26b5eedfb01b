// spore::dist: collectives across processes, and data-parallel training on top of them
// (NOTE [Distributed training] in docs/design.md).
//
// A ProcessGroup is made once per process from the launcher's environment (`spore launch`, Open
// MPI's mpirun, or torchrun-style RANK / WORLD_SIZE with mpirun underneath) and runs collectives
// on host tensors through a CommBackend: MPI now; NCCL beside it later, behind the same small
// interface, without touching callers. Every collective is watched: one that does not complete
// within the group's timeout (a rank died or stopped calling collectives) raises spore::Error
// (kIO) naming the collective, its sequence number and the rank, and poisons the group, so the
// next call fails at once and finalize() aborts the job instead of waiting for the dead rank.
// Built only where CMake finds MPI (target spore_dist).
#pragma once
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "spore/autograd.h"
#include "spore/data.h"
#include "spore/nn/cell.h"
#include "spore/tensor.h"

namespace spore::dist {

enum class ReduceOp { kSum, kMean, kMax };
const char* reduce_op_name(ReduceOp op);

// ---- the backend seam ------------------------------------------------------------------------
// One outstanding collective of a backend. test() makes progress and says whether it is done
// (an MPI failure throws kIO); the ProcessGroup's wait loop calls it under the watchdog.
class CommRequest {
 public:
  virtual ~CommRequest() = default;
  virtual bool test() = 0;
  // Blocks until the request is done (true) or `deadline` has passed (false). The default tests
  // once and returns: the wait loop then polls; a request that completes on another thread (the
  // MPI backend's all-reduce thread) sleeps here instead.
  virtual bool wait_until(std::chrono::steady_clock::time_point deadline) {
    (void)deadline;
    return test();
  }
  // The watchdog's message for this request, given before waiting: a request that may run its
  // call on the waiting thread (the MPI backend's all-reduce, NOTE [The caller runs its own
  // all-reduce]) reports it and ends the job itself when the call outlives the deadline, since a
  // thread blocked inside MPI cannot return to raise it.
  virtual void set_timeout_message(const std::string& message) { (void)message; }
};

// What a communication library must provide. Buffers are contiguous host memory of `count`
// elements of `dtype`; every call starts a collective and returns its request at once. kMean
// never reaches a backend (the group sums, then divides).
class CommBackend {
 public:
  virtual ~CommBackend() = default;
  virtual const char* name() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // recv may equal send (in place). `in_rank_order`: the sum is formed on rank 0 as
  // ((x0 + x1) + x2) + ... in the dtype's own arithmetic and sent back to every rank, so the bits
  // do not depend on the library's reduction tree (slower; for verification). Such requests may
  // finish in any order; the others must be started in the same order on every rank.
  // `caller_waits`: the caller waits for this request at once (a blocking all_reduce), so a
  // backend may run the call on the caller's thread inside wait_until (NOTE [The caller runs its
  // own all-reduce]); otherwise the call must make progress without being waited for.
  virtual std::unique_ptr<CommRequest> all_reduce(const void* send, void* recv, int64_t count,
                                                  DType dtype, ReduceOp op, bool in_rank_order,
                                                  bool caller_waits) = 0;
  virtual std::unique_ptr<CommRequest> broadcast(void* buf, int64_t count, DType dtype,
                                                 int root) = 0;
  // recv holds size() blocks of `count`, block r from rank r.
  virtual std::unique_ptr<CommRequest> all_gather(const void* send, void* recv, int64_t count,
                                                  DType dtype) = 0;
  // send holds size() blocks of `count`; recv gets the reduction of block rank().
  virtual std::unique_ptr<CommRequest> reduce_scatter(const void* send, void* recv, int64_t count,
                                                      DType dtype, ReduceOp op) = 0;
  virtual std::unique_ptr<CommRequest> barrier() = 0;
  // Ends the whole job now (a watchdog fired: waiting in a clean shutdown would hang).
  virtual void abort(int exit_code) noexcept = 0;
  // Clean shutdown (MPI_Finalize).
  virtual void finalize() noexcept = 0;
};

// ---- the process group -----------------------------------------------------------------------
struct InitOptions {
  // Watchdog: the longest a collective may wait for the other ranks. SPORE_DIST_TIMEOUT_S
  // in the environment overrides it.
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  // Debug check that every rank calls the same collective with the same shape and dtype, by
  // sequence number (one extra small all-gather per collective). Default: on in debug builds or
  // with SPORE_DIST_DEBUG=1.
  bool check_order = false;
  bool check_order_from_env_or_build = true;  // false: use check_order as given
  // Let a program started without a launcher run as a group of one (otherwise init() refuses
  // with the `spore launch` line to use).
  bool allow_single_process = false;
};

class ProcessGroup;
class Work;

// Starts the process group of this process (MindSpore's communication.init). Reads the launcher's
// environment; a second call returns the same group. Errors (kValue) name the variables found and
// the `spore launch` line to use. Also applies SPORE_NUM_THREADS (set by `spore launch`) to the
// context's thread count when that is still "one per core".
ProcessGroup& init(const InitOptions& options = {});
bool is_initialized();
ProcessGroup& world();  // kValue before init()
int get_rank();         // MindSpore's spelling: 0 before init()
int get_group_size();   // 1 before init()
// Clean shutdown (MPI_Finalize), or abort of the job when a watchdog fired. Idempotent.
void finalize();

class ProcessGroup {
 public:
  // A group over an existing backend (init() makes the MPI one; tests may build their own).
  ProcessGroup(std::unique_ptr<CommBackend> backend, const InitOptions& options);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  const char* backend_name() const;
  std::chrono::milliseconds timeout() const { return timeout_; }
  void set_timeout(std::chrono::milliseconds t) { timeout_ = t; }
  bool check_order() const { return check_order_; }
  void set_check_order(bool on) { check_order_ = on; }
  // True once a watchdog fired or a collective failed: every later call throws at once.
  bool broken() const { return !broken_reason_.empty(); }
  uint64_t sequence() const { return seq_; }  // collectives started so far

  // Blocking collectives: new contiguous tensors, the input untouched. Host tensors only
  // (kDevice otherwise); reductions on bool are kDType; float16/bfloat16 reduce in float32.
  Tensor all_reduce(const Tensor& x, ReduceOp op = ReduceOp::kSum, bool in_rank_order = false);
  Tensor broadcast(const Tensor& x, int root = 0);  // x's shape and dtype must agree on all ranks
  Tensor all_gather(const Tensor& x);               // [size * x.shape[0], ...] (a 0-d x: [size])
  Tensor reduce_scatter(const Tensor& x, ReduceOp op = ReduceOp::kSum);  // x.shape[0] % size == 0
  void barrier();

  // Non-blocking forms: the collective is started now; Work::wait() returns its result.
  Work iall_reduce(const Tensor& x, ReduceOp op = ReduceOp::kSum, bool in_rank_order = false);
  Work ibroadcast(const Tensor& x, int root = 0);
  Work iall_gather(const Tensor& x);
  Work ireduce_scatter(const Tensor& x, ReduceOp op = ReduceOp::kSum);
  Work ibarrier();

  // In place on a contiguous host tensor this group may write (the data-parallel buckets), and
  // its blocking form (the all_reduce op's kernel).
  Work iall_reduce_inplace(Tensor buffer, ReduceOp op, bool in_rank_order);
  void all_reduce_inplace(Tensor buffer, ReduceOp op, bool in_rank_order);

  // Called by Work: waits under the watchdog, then finishes the result (kMean's division).
  void wait_request(CommRequest& request, const std::string& what);
  std::string timeout_message(const std::string& what, const char* then) const;
  void mark_broken(const std::string& reason) {
    if (broken_reason_.empty()) broken_reason_ = reason;
  }
  void abort_job() noexcept;
  void finalize_backend() noexcept;

 private:
  // `caller_waits`: the blocking forms, which wait at once (CommBackend::all_reduce).
  Work start_all_reduce(const Tensor& x, ReduceOp op, bool in_rank_order, bool caller_waits);
  Work start_all_reduce_inplace(Tensor buffer, ReduceOp op, bool in_rank_order, bool caller_waits);
  void require_usable(const char* collective) const;
  void check_call(const char* collective, const Tensor& x, int64_t extra);
  std::unique_ptr<CommBackend> backend_;
  int rank_ = 0, size_ = 1;
  std::chrono::milliseconds timeout_;
  bool check_order_ = false;
  uint64_t seq_ = 0;
  std::string broken_reason_;
  bool finalized_ = false;
};

// The handle of a non-blocking collective. wait() blocks (under the watchdog) and returns the
// result; a second wait() returns it again. A Work dropped without wait() waits in its destructor
// (MPI forbids freeing a buffer a collective still uses), swallowing errors.
class Work {
 public:
  Work() = default;
  Work(ProcessGroup* group, std::unique_ptr<CommRequest> request, Tensor result, std::string what,
       std::function<void(Tensor&)> finish);
  Work(Work&&) noexcept;
  Work& operator=(Work&&) noexcept;
  ~Work();
  bool valid() const { return group_ != nullptr; }
  bool test();  // progress without blocking; true when complete (then wait() returns at once)
  Tensor wait();

 private:
  void release() noexcept;  // waits for an unfinished collective (the destructor's job)
  ProcessGroup* group_ = nullptr;
  std::unique_ptr<CommRequest> request_;
  Tensor result_;
  std::string what_;
  std::function<void(Tensor&)> finish_;
  bool done_ = false;
};

// ---- collectives as ops (NOTE [Collective ops]) ------------------------------------------------
// The world group's collectives as registry ops: what a jit trace records as graph nodes and the
// tape differentiates (all_reduce sum's gradient is all_reduce sum of the gradient, ...). The
// same semantics as the ProcessGroup methods, results in new tensors. Before init() the process
// is a group of one (each is a copy of x). all_gather and reduce_scatter record the group's size
// in the node, so a graph traced on N processes refuses to run on another number.
Tensor all_reduce(const Tensor& x, ReduceOp op = ReduceOp::kSum, bool in_rank_order = false);
Tensor broadcast(const Tensor& x, int root = 0);
Tensor all_gather(const Tensor& x);
Tensor reduce_scatter(const Tensor& x, ReduceOp op = ReduceOp::kSum);
// x, once every rank has reached its barrier (the input orders it among a graph's nodes).
Tensor barrier(const Tensor& x);

// ---- data parallelism (NOTE [Distributed training]) ------------------------------------------
struct DdpOptions {
  int64_t bucket_bytes = 25ll << 20;  // gradients are all-reduced in buckets of about this size
  bool gradients_mean = true;         // divide the summed gradients by the group's size
  bool broadcast_parameters = true;   // copy rank 0's parameters to every rank at construction
  bool in_rank_order = false;         // bitwise-reproducible sums (CommBackend::all_reduce)
};

// Gradient buckets for a fixed list of parameters. Parameters are placed in reverse order (the
// backward pass finishes the last layer's gradients first), a bucket holding one dtype and about
// bucket_bytes; when every gradient of a bucket has arrived it is all-reduced at once, buckets
// always started in index order so every rank issues the same sequence of collectives.
class GradBuckets {
 public:
  GradBuckets(ProcessGroup& group, const std::vector<Parameter>& params, const DdpOptions& options);
  void begin_step();                                  // fresh buffers; nothing pending
  void grad_ready(size_t index, const Tensor& grad);  // parameter `index`'s gradient is final
  std::vector<Tensor> finish();                       // waits; the reduced gradients, in order
  size_t num_buckets() const { return buckets_.size(); }
  // Buckets of the last step started before finish(), i.e. from grad_ready during backward.
  size_t launched_during_backward() const { return launched_in_backward_; }
  // Which bucket each parameter went into (for tests and the docs' cost model).
  const std::vector<size_t>& bucket_of() const { return bucket_of_; }
  // The graph-mode form of a step (NOTE [Data parallelism in graph mode]): the gradients, in
  // parameter order, reduced by ops only (concat per bucket, one all_reduce op per bucket in
  // bucket order, slice and reshape back), so a jit trace records the collectives as nodes.
  std::vector<Tensor> reduce_with_ops(const std::vector<Tensor>& grads) const;

 private:
  struct Bucket {
    DType dtype;
    std::vector<size_t> params;  // indices into the parameter list
    std::vector<int64_t> offsets;
    int64_t numel = 0;
    Tensor buffer;
    size_t pending = 0;
    Work work;
  };
  void launch_ready();
  ProcessGroup& group_;
  DdpOptions options_;
  std::vector<Shape> shapes_;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_, slot_of_;
  size_t next_launch_ = 0, launched_in_backward_ = 0;
};

// PyTorch's DistributedDataParallel for any Cell, MindSpore's data-parallel mode: the same
// network on every rank, each rank a different shard of every batch, gradients averaged.
class DistributedDataParallel {
 public:
  DistributedDataParallel(nn::CellPtr net, ProcessGroup& group, DdpOptions options = {});
  nn::Cell& module() { return *net_; }
  Tensor operator()(const Tensor& x) { return (*net_)(x); }
  std::vector<Parameter> trainable_params() const { return params_; }
  // value_and_grad over the network's trainable parameters, whose weight_grads come back
  // all-reduced (each bucket started from the tape's gradient-ready hook during backward).
  // Inside a jit trace (the compiled train step) the buckets become graph nodes instead: per
  // bucket, its gradients concatenated, one all_reduce op (kMean with gradients_mean), sliced
  // back (NOTE [Data parallelism in graph mode]).
  std::function<ValueAndGrad(const std::vector<Tensor>&)> value_and_grad(TensorFn loss_fn);
  // Rank 0's parameters (all of them, moving statistics too) to every rank.
  void broadcast_parameters();
  const GradBuckets& buckets() const { return *buckets_; }

 private:
  nn::CellPtr net_;
  ProcessGroup& group_;
  DdpOptions options_;
  std::vector<Parameter> params_;
  std::shared_ptr<GradBuckets> buckets_;
};

// Rank 0 writes the network's checkpoint atomically (spore::save_checkpoint; metadata gains
// "world_size"); the other ranks wait for it and raise rank 0's error if it failed, so no rank
// goes on believing a checkpoint exists that does not. Parameters are replicated, so the file
// loads into any world size (or a single process) with load_checkpoint as usual.
void save_checkpoint(ProcessGroup& group, const nn::Cell& net, const std::filesystem::path& path,
                     std::map<std::string, std::string> extra_metadata = {});

// PyTorch's DistributedSampler: rank `rank` of `num_replicas` gets a disjoint, strided shard of a
// permutation of 0..dataset_size-1 drawn from seed + epoch (the same on every rank). When the size
// does not divide evenly, drop_last drops the tail so every rank has floor(n / R) samples;
// otherwise the permutation is padded by repeating its start so every rank has ceil(n / R).
class DistributedSampler {
 public:
  DistributedSampler(int64_t dataset_size, int num_replicas, int rank, bool shuffle = true,
                     uint64_t seed = 0, bool drop_last = false);
  void set_epoch(int64_t epoch) { *epoch_ = epoch; }
  int64_t epoch() const { return *epoch_; }
  int64_t num_samples() const { return num_samples_; }
  int64_t total_size() const { return num_samples_ * replicas_; }
  std::vector<int64_t> indices() const;  // this rank's, for the current epoch
  // A dataset of this rank's rows of `fn`: each pass (each iterator, each repeat) takes the
  // current epoch's shard and then advances the epoch, so repeat() reshuffles like set_epoch.
  data::Dataset dataset(data::RandomAccessFn fn, std::vector<std::string> column_names) const;

 private:
  int64_t n_;
  int replicas_, rank_;
  bool shuffle_;
  uint64_t seed_;
  int64_t num_samples_;
  std::shared_ptr<int64_t> epoch_;
};

// The `spore launch` line that starts `argv` on `ranks` processes (for error messages).
std::string launch_hint(int ranks, const std::vector<std::string>& argv);

}  // namespace spore::dist
