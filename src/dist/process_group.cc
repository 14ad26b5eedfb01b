// ProcessGroup and Work: collectives on tensors over a CommBackend, the watchdog, and the debug
// check of collective order (NOTE [Distributed training]).
#include <array>
#include <chrono>
#include <cstring>
#include <thread>

#include "spore/dist.h"
#include "spore/ops.h"

namespace spore::dist {

namespace {

using Clock = std::chrono::steady_clock;

bool is_low_float(DType d) {
  return d == DType::kFloat16 || d == DType::kBFloat16;
}

// Returns x as a contiguous host tensor of the dtype the backend reduces in (16-bit floats go
// through float32: MPI has no arithmetic on them), refusing what cannot be reduced.
Tensor reducible(const char* what, const Tensor& x, ReduceOp op) {
  if (x.dtype() == DType::kBool)
    throw Error(ErrorCode::kDType,
                std::string("dist::") + what + ": bool tensors cannot be reduced; cast to int32");
  if (op == ReduceOp::kMean && !is_floating(x.dtype()))
    throw Error(ErrorCode::kDType, std::string("dist::") + what + ": the mean of " +
                                       dtype_name(x.dtype()) + " values is not " +
                                       dtype_name(x.dtype()) + "; cast to float32 first");
  if (is_low_float(x.dtype())) return cast(x, DType::kFloat32);
  return x.contiguous();
}

void require_host(const char* what, const Tensor& x) {
  if (!x.defined())
    throw Error(ErrorCode::kValue, std::string("dist::") + what + ": the tensor is undefined");
  if (x.device().backend != kCpuBackend)
    throw Error(ErrorCode::kDevice,
                std::string("dist::") + what +
                    ": the MPI backend moves host memory, but the tensor is on " +
                    x.device().str() + "; copy it with .to(Device::cpu()) first");
}

// In-place division by the group size for kMean (after the sum), in the buffer's own dtype.
void divide_by(Tensor& t, int n) {
  if (t.dtype() == DType::kFloat32) {
    float* p = t.data<float>();
    for (int64_t i = 0, e = t.numel(); i < e; ++i) p[i] = p[i] / (float)n;
  } else if (t.dtype() == DType::kFloat64) {
    double* p = t.data<double>();
    for (int64_t i = 0, e = t.numel(); i < e; ++i) p[i] = p[i] / (double)n;
  }
}

// The result's finishing steps: the mean's division, then the cast back to a 16-bit float.
std::function<void(Tensor&)> finisher(ReduceOp op, int size, DType out_dtype, Tensor keep_alive) {
  return [op, size, out_dtype, keep_alive](Tensor& r) {
    if (op == ReduceOp::kMean) divide_by(r, size);
    if (r.dtype() != out_dtype) r = cast(r, out_dtype);
  };
}

enum Collective : int64_t { kAllReduce = 1, kBroadcast, kAllGather, kReduceScatter, kBarrier };
const char* collective_name(int64_t c) {
  switch (c) {
    case kAllReduce:
      return "all_reduce";
    case kBroadcast:
      return "broadcast";
    case kAllGather:
      return "all_gather";
    case kReduceScatter:
      return "reduce_scatter";
    case kBarrier:
      return "barrier";
  }
  return "?";
}

// What the order check compares: sequence number, collective, dtype, rank of the shape, the
// first four extents (later ones folded into the fourth) and one extra (root or reduce op).
constexpr int kPrint = 9;
using Fingerprint = std::array<int64_t, kPrint>;

std::string describe(const Fingerprint& f) {
  std::string s = std::string(collective_name(f[1])) + " #" + std::to_string(f[0]);
  if (f[1] == kBarrier) return s;
  s += std::string(" on ") + dtype_name((DType)f[2]) + "[";
  for (int64_t i = 0; i < f[3] && i < 4; ++i) s += (i ? ", " : "") + std::to_string(f[4 + i]);
  if (f[3] > 4) s += ", ...";
  return s + "] (" + (f[1] == kBroadcast ? "root " : "op ") + std::to_string(f[8]) + ")";
}

}  // namespace

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kMean:
      return "mean";
    case ReduceOp::kMax:
      return "max";
  }
  return "?";
}

ProcessGroup::ProcessGroup(std::unique_ptr<CommBackend> backend, const InitOptions& options)
    : backend_(std::move(backend)), timeout_(options.timeout), check_order_(options.check_order) {
  rank_ = backend_->rank();
  size_ = backend_->size();
}

ProcessGroup::~ProcessGroup() {
  finalize_backend();
}

const char* ProcessGroup::backend_name() const {
  return backend_->name();
}

void ProcessGroup::require_usable(const char* collective) const {
  if (finalized_)
    throw Error(ErrorCode::kValue,
                std::string("dist::") + collective + ": the process group was finalized");
  if (broken())
    throw Error(ErrorCode::kIO,
                std::string("dist::") + collective + " on rank " + std::to_string(rank_) +
                    ": the process group is broken (" + broken_reason_ +
                    "); end the program: the job cannot continue without the lost rank");
}

// `then`: what happens next (the group breaks and the caller gets this as an error, or, for a
// call stuck inside MPI on the waiting thread, the all-reduce thread ends the job).
std::string ProcessGroup::timeout_message(const std::string& what, const char* then) const {
  const double s = std::chrono::duration<double>(timeout_).count();
  return "dist: " + what + " on rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
         " did not complete within the watchdog timeout of " + std::to_string(s).substr(0, 6) +
         " s: another rank has probably died or stopped calling collectives (check its output). " +
         then + " Raise the limit with InitOptions::timeout or SPORE_DIST_TIMEOUT_S if a rank is only slow.";
}

void ProcessGroup::wait_request(CommRequest& request, const std::string& what) {
  const Clock::time_point start = Clock::now(), deadline = start + timeout_;
  request.set_timeout_message(timeout_message(
      what, "The call is stuck inside MPI on the waiting thread, so the job ends (MPI_Abort)."));
  // Poll: spin briefly (a collective between busy ranks finishes in microseconds), then yield
  // the core (ranks may outnumber cores: --oversubscribe) for up to 10 s, then sleep a little,
  // always watching the deadline. MPI makes progress only inside test(), on this thread: a large
  // message moves one shared-memory fragment per call, so sleeping between calls (from 2 ms on,
  // at first) made a 4 MiB all-reduce wait a sleep per fragment and a 256 MiB one 2.5x slower
  // than MPI_Allreduce (bench/run_dist.py). A yield costs nothing when no other rank wants the
  // core, as Open MPI's own yield_when_idle; only a wait longer than any sane collective (a
  // straggler, or a rank gone) falls to sleeping, to stop burning a core until the watchdog.
  // A request that completes on another thread (the MPI backend's all-reduce thread) sleeps in
  // wait_until until it is done or the deadline passes, so it makes one pass of this loop.
  for (int polls = 0;; ++polls) {
    bool done = false;
    try {
      done = request.wait_until(deadline);
    } catch (const Error& e) {
      mark_broken(e.what());
      throw;
    }
    if (done) return;
    const Clock::time_point now = Clock::now();
    if (now >= deadline) {
      const double s = std::chrono::duration<double>(timeout_).count();
      broken_reason_ =
          what + " did not complete within the watchdog's " + std::to_string(s).substr(0, 6) + " s";
      throw Error(ErrorCode::kIO,
                  timeout_message(what, "The group is now broken; finalize() ends the job."));
    }
    if (polls < 200) continue;
    if (now - start < std::chrono::seconds(10))
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// The debug check: every rank contributes the fingerprint of the call it is making, and all
// compare. A mismatch is the bug "ranks call collectives in a different order": MPI would pair
// the wrong calls and hang or mix data.
void ProcessGroup::check_call(const char* collective, const Tensor& x, int64_t extra) {
  ++seq_;
  if (!check_order_ || size_ == 1) return;
  int64_t id = kBarrier;
  for (int64_t c = kAllReduce; c <= kBarrier; ++c)
    if (std::strcmp(collective, collective_name(c)) == 0) id = c;
  Fingerprint mine{};
  mine[0] = (int64_t)seq_;
  mine[1] = id;
  if (x.defined()) {
    mine[2] = (int64_t)x.dtype();
    mine[3] = x.shape().ndim();
    for (int i = 0; i < x.shape().ndim(); ++i) {
      if (i < 4)
        mine[4 + i] = x.shape()[i];
      else
        mine[7] *= x.shape()[i];
    }
  }
  mine[8] = extra;
  std::vector<int64_t> all((size_t)size_ * kPrint);
  auto req = backend_->all_gather(mine.data(), all.data(), kPrint, DType::kInt64);
  wait_request(*req, std::string("the order check of ") + collective + " #" + std::to_string(seq_));
  std::string diff;
  bool same = true;
  for (int r = 0; r < size_; ++r) {
    Fingerprint f;
    std::memcpy(f.data(), all.data() + (size_t)r * kPrint, sizeof(f));
    same &= f == mine;
    diff += "\n  rank " + std::to_string(r) + ": " + describe(f);
  }
  if (!same)
    throw Error(ErrorCode::kValue,
                "dist: the ranks called different collectives at the same point (each rank must "
                "make the same "
                "collective calls, with the same shapes and dtypes, in the same order):" +
                    diff);
}

Work ProcessGroup::iall_reduce(const Tensor& x, ReduceOp op, bool in_rank_order) {
  return start_all_reduce(x, op, in_rank_order, false);
}

Work ProcessGroup::start_all_reduce(const Tensor& x, ReduceOp op, bool in_rank_order,
                                    bool caller_waits) {
  require_usable("all_reduce");
  require_host("all_reduce", x);
  Tensor in = reducible("all_reduce", x, op);
  check_call("all_reduce", x, (int64_t)op);
  Tensor out = Tensor::empty(in.shape(), in.dtype(), Device::cpu());
  auto req = backend_->all_reduce(in.data_ptr(), out.data_ptr(), in.numel(), in.dtype(), op,
                                  in_rank_order, caller_waits);
  return Work(this, std::move(req), out, std::string("all_reduce #") + std::to_string(seq_),
              finisher(op, size_, x.dtype(), in));
}

Work ProcessGroup::iall_reduce_inplace(Tensor buffer, ReduceOp op, bool in_rank_order) {
  return start_all_reduce_inplace(std::move(buffer), op, in_rank_order, false);
}

void ProcessGroup::all_reduce_inplace(Tensor buffer, ReduceOp op, bool in_rank_order) {
  start_all_reduce_inplace(std::move(buffer), op, in_rank_order, true).wait();
}

Work ProcessGroup::start_all_reduce_inplace(Tensor buffer, ReduceOp op, bool in_rank_order,
                                            bool caller_waits) {
  require_usable("all_reduce");
  require_host("all_reduce", buffer);
  if (!buffer.is_contiguous() || is_low_float(buffer.dtype()) || buffer.dtype() == DType::kBool)
    throw Error(ErrorCode::kInternal,
                "dist: an in-place all_reduce needs a contiguous float32/float64/integer buffer");
  check_call("all_reduce", buffer, (int64_t)op);
  auto req = backend_->all_reduce(buffer.data_ptr(), buffer.data_ptr(), buffer.numel(),
                                  buffer.dtype(), op, in_rank_order, caller_waits);
  return Work(this, std::move(req), buffer, std::string("all_reduce #") + std::to_string(seq_),
              finisher(op, size_, buffer.dtype(), Tensor()));
}

Work ProcessGroup::ibroadcast(const Tensor& x, int root) {
  require_usable("broadcast");
  require_host("broadcast", x);
  if (root < 0 || root >= size_)
    throw Error(ErrorCode::kValue, "dist::broadcast: root " + std::to_string(root) +
                                       " is not a rank of this group of " + std::to_string(size_));
  check_call("broadcast", x, root);
  Tensor buf = rank_ == root ? x.clone() : Tensor::empty(x.shape(), x.dtype(), Device::cpu());
  auto req = backend_->broadcast(buf.data_ptr(), buf.numel(), buf.dtype(), root);
  return Work(this, std::move(req), buf, std::string("broadcast #") + std::to_string(seq_),
              nullptr);
}

Work ProcessGroup::iall_gather(const Tensor& x) {
  require_usable("all_gather");
  require_host("all_gather", x);
  check_call("all_gather", x, 0);
  Tensor in = x.contiguous();
  Shape dims = in.shape();
  if (dims.ndim() == 0)
    dims = Shape{(int64_t)size_};
  else
    dims[0] *= size_;
  Tensor out = Tensor::empty(dims, in.dtype(), Device::cpu());
  auto req = backend_->all_gather(in.data_ptr(), out.data_ptr(), in.numel(), in.dtype());
  return Work(this, std::move(req), out, std::string("all_gather #") + std::to_string(seq_),
              [in](Tensor&) {});
}

Work ProcessGroup::ireduce_scatter(const Tensor& x, ReduceOp op) {
  require_usable("reduce_scatter");
  require_host("reduce_scatter", x);
  if (x.shape().ndim() == 0 || x.shape()[0] % size_ != 0)
    throw Error(ErrorCode::kShape, "dist::reduce_scatter: the first axis of " + x.shape().str() +
                                       " must split evenly into the group's " +
                                       std::to_string(size_) + " ranks; pad it to a multiple of " +
                                       std::to_string(size_));
  Tensor in = reducible("reduce_scatter", x, op);
  check_call("reduce_scatter", x, (int64_t)op);
  Shape dims = in.shape();
  dims[0] /= size_;
  Tensor out = Tensor::empty(dims, in.dtype(), Device::cpu());
  auto req = backend_->reduce_scatter(in.data_ptr(), out.data_ptr(), out.numel(), in.dtype(), op);
  return Work(this, std::move(req), out, std::string("reduce_scatter #") + std::to_string(seq_),
              finisher(op, size_, x.dtype(), in));
}

Work ProcessGroup::ibarrier() {
  require_usable("barrier");
  check_call("barrier", Tensor(), 0);
  return Work(this, backend_->barrier(), Tensor(), std::string("barrier #") + std::to_string(seq_),
              nullptr);
}

Tensor ProcessGroup::all_reduce(const Tensor& x, ReduceOp op, bool in_rank_order) {
  return start_all_reduce(x, op, in_rank_order, true).wait();
}
Tensor ProcessGroup::broadcast(const Tensor& x, int root) {
  return ibroadcast(x, root).wait();
}
Tensor ProcessGroup::all_gather(const Tensor& x) {
  return iall_gather(x).wait();
}
Tensor ProcessGroup::reduce_scatter(const Tensor& x, ReduceOp op) {
  return ireduce_scatter(x, op).wait();
}
void ProcessGroup::barrier() {
  ibarrier().wait();
}

void ProcessGroup::abort_job() noexcept {
  backend_->abort(3);
}

void ProcessGroup::finalize_backend() noexcept {
  if (finalized_) return;
  finalized_ = true;
  // A rank that gave up on a collective cannot shut down cleanly: MPI_Finalize would wait for the
  // rank that is gone. End the job instead (mpirun then stops every rank).
  if (broken() && size_ > 1) backend_->abort(3);
  backend_->finalize();
}

// ---- Work ------------------------------------------------------------------------------------

Work::Work(ProcessGroup* group, std::unique_ptr<CommRequest> request, Tensor result,
           std::string what, std::function<void(Tensor&)> finish)
    : group_(group),
      request_(std::move(request)),
      result_(std::move(result)),
      what_(std::move(what)),
      finish_(std::move(finish)) {}

Work::Work(Work&& o) noexcept {
  *this = std::move(o);
}

Work& Work::operator=(Work&& o) noexcept {
  if (this != &o) {
    release();
    group_ = std::exchange(o.group_, nullptr);
    request_ = std::move(o.request_);
    result_ = std::move(o.result_);
    what_ = std::move(o.what_);
    finish_ = std::move(o.finish_);
    done_ = std::exchange(o.done_, false);
  }
  return *this;
}

Work::~Work() {
  release();
}

void Work::release() noexcept {
  if (!group_ || done_) {
    group_ = nullptr;
    return;
  }
  if (group_->broken()) {
    // The collective will never finish and MPI may still write the buffers: keep them (the
    // job is about to end).
    (void)new Tensor(result_);
    (void)new std::function<void(Tensor&)>(std::move(finish_));
    (void)request_.release();
    group_ = nullptr;
    return;
  }
  try {
    wait();
  } catch (...) {
  }
  group_ = nullptr;
}

bool Work::test() {
  if (!group_)
    throw Error(ErrorCode::kValue,
                "dist::Work: an empty handle (default-constructed or moved from)");
  if (done_) return true;
  bool finished = false;
  try {
    finished = request_->test();
  } catch (const Error& e) {
    group_->mark_broken(e.what());
    throw;
  }
  if (finished) wait();
  return finished;
}

Tensor Work::wait() {
  if (!group_)
    throw Error(ErrorCode::kValue,
                "dist::Work: an empty handle (default-constructed or moved from)");
  if (!done_) {
    group_->wait_request(*request_, what_);
    done_ = true;
    if (finish_) finish_(result_);
    finish_ = nullptr;
  }
  return result_;
}

}  // namespace spore::dist
