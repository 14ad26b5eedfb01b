// Gradient buckets: gradients copied into flat buffers as they become final during backward, each
// bucket all-reduced as soon as it is full (NOTE [Distributed training]).
#include <cstring>

#include "spore/dist.h"
#include "spore/ops.h"

namespace spore::dist {

GradBuckets::GradBuckets(ProcessGroup& group, const std::vector<Parameter>& params,
                         const DdpOptions& options)
    : group_(group), options_(options) {
  if (options.bucket_bytes <= 0)
    throw Error(ErrorCode::kValue,
                "DistributedDataParallel: bucket_bytes must be positive (default 25 MiB)");
  const size_t n = params.size();
  shapes_.resize(n);
  bucket_of_.assign(n, 0);
  slot_of_.assign(n, 0);
  // Reverse order: backward finishes the last layers' gradients first, so the first bucket
  // fills (and starts its all-reduce) while the earlier layers are still being differentiated.
  for (size_t k = n; k-- > 0;) {
    const Tensor& v = params[k].value();
    if (!is_floating(v.dtype()))
      throw Error(ErrorCode::kDType, "DistributedDataParallel: parameter '" + params[k].name() +
                                         "' is " + dtype_name(v.dtype()) +
                                         "; trainable parameters must be floating point");
    // 16-bit parameters' gradients are summed in float32 (MPI has no 16-bit arithmetic).
    const DType bd = v.dtype() == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
    shapes_[k] = v.shape();
    const int64_t bytes = v.numel() * (int64_t)dtype_size(bd);
    if (buckets_.empty() || buckets_.back().dtype != bd ||
        (buckets_.back().numel > 0 &&
         buckets_.back().numel * (int64_t)dtype_size(bd) + bytes > options.bucket_bytes))
      buckets_.push_back(Bucket{bd, {}, {}, 0, Tensor(), 0, Work()});
    Bucket& b = buckets_.back();
    bucket_of_[k] = buckets_.size() - 1;
    slot_of_[k] = b.params.size();
    b.params.push_back(k);
    b.offsets.push_back(b.numel);
    b.numel += v.numel();
  }
}

void GradBuckets::begin_step() {
  // Fresh buffers every step: the gradients handed out last step are views into the old ones.
  for (Bucket& b : buckets_) {
    b.buffer = Tensor::empty(Shape{b.numel}, b.dtype, Device::cpu());
    b.pending = b.params.size();
    b.work = Work();
  }
  next_launch_ = 0;
}

void GradBuckets::grad_ready(size_t index, const Tensor& grad) {
  Bucket& b = buckets_.at(bucket_of_.at(index));
  if (!b.buffer.defined())
    throw Error(ErrorCode::kInternal, "DistributedDataParallel: a gradient arrived outside a step");
  Tensor g = grad.dtype() == b.dtype ? grad.contiguous() : cast(grad, b.dtype).contiguous();
  if (g.shape() != shapes_[index])
    throw Error(ErrorCode::kShape, "DistributedDataParallel: gradient " + std::to_string(index) +
                                       " has shape " + g.shape().str() + ", its parameter " +
                                       shapes_[index].str());
  const int64_t off = b.offsets[slot_of_[index]];
  std::memcpy((uint8_t*)b.buffer.data_ptr() + off * (int64_t)dtype_size(b.dtype), g.data_ptr(),
              g.nbytes());
  if (b.pending == 0)
    throw Error(ErrorCode::kInternal, "DistributedDataParallel: a gradient arrived twice");
  --b.pending;
  launch_ready();
}

// Starts every bucket that is complete and whose predecessors have started: the same sequence
// of collectives on every rank whatever order the gradients arrive in. Also gives MPI a chance
// to progress the buckets already in flight.
void GradBuckets::launch_ready() {
  while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) {
    Bucket& b = buckets_[next_launch_++];
    b.work = group_.iall_reduce_inplace(b.buffer,
                                        options_.gradients_mean ? ReduceOp::kMean : ReduceOp::kSum,
                                        options_.in_rank_order);
  }
  for (size_t k = 0; k < next_launch_; ++k)
    if (buckets_[k].work.valid()) buckets_[k].work.test();
}

std::vector<Tensor> GradBuckets::finish() {
  for (const Bucket& b : buckets_)
    if (b.pending != 0)
      throw Error(ErrorCode::kInternal,
                  "DistributedDataParallel: backward ended with gradients missing from a bucket");
  launched_in_backward_ = next_launch_;
  launch_ready();
  std::vector<Tensor> grads(shapes_.size());
  for (Bucket& b : buckets_) {
    Tensor reduced = b.work.wait();
    for (size_t s = 0; s < b.params.size(); ++s) {
      const size_t k = b.params[s];
      const int64_t numel = shapes_[k].numel();
      grads[k] =
          reshape(slice(reduced, 0, b.offsets[s], b.offsets[s] + numel), shapes_[k].to_vector());
    }
    b.buffer = Tensor();
  }
  return grads;
}

std::vector<Tensor> GradBuckets::reduce_with_ops(const std::vector<Tensor>& grads) const {
  if (grads.size() != shapes_.size())
    throw Error(ErrorCode::kInternal, "DistributedDataParallel: " + std::to_string(grads.size()) +
                                          " gradients for " + std::to_string(shapes_.size()) +
                                          " parameters");
  const ReduceOp op = options_.gradients_mean ? ReduceOp::kMean : ReduceOp::kSum;
  std::vector<Tensor> out(grads.size());
  // Bucket by bucket in index order, as the eager path starts them: the same sequence of
  // collectives on every rank, and each element summed from the same operands as eagerly.
  for (const Bucket& b : buckets_) {
    std::vector<Tensor> flat;
    for (size_t k : b.params) {
      const Tensor& g = grads[k];
      if (!g.defined())
        throw Error(ErrorCode::kInternal,
                    "DistributedDataParallel: no gradient for parameter " + std::to_string(k));
      if (g.shape() != shapes_[k])
        throw Error(ErrorCode::kShape, "DistributedDataParallel: gradient " + std::to_string(k) +
                                           " has shape " + g.shape().str() + ", its parameter " +
                                           shapes_[k].str());
      flat.push_back(reshape(g.dtype() == b.dtype ? g : cast(g, b.dtype), {-1}));
    }
    const Tensor reduced =
        all_reduce(flat.size() == 1 ? flat[0] : concat(flat, 0), op, options_.in_rank_order);
    for (size_t s = 0; s < b.params.size(); ++s) {
      const size_t k = b.params[s];
      out[k] = reshape(slice(reduced, 0, b.offsets[s], b.offsets[s] + shapes_[k].numel()),
                       shapes_[k].to_vector());
    }
  }
  return out;
}

}  // namespace spore::dist
