// DistributedDataParallel: one network per rank, kept identical by broadcasting rank 0's
// parameters once and averaging gradients every step (NOTE [Distributed training]).
#include "spore/dist.h"
#include "spore/jit.h"

namespace spore::dist {

DistributedDataParallel::DistributedDataParallel(nn::CellPtr net, ProcessGroup& group,
                                                 DdpOptions options)
    : net_(std::move(net)), group_(group), options_(options) {
  if (!net_) throw Error(ErrorCode::kValue, "DistributedDataParallel: the network is null");
  params_ = net_->trainable_params();
  if (params_.empty())
    throw Error(ErrorCode::kValue,
                "DistributedDataParallel: the network has no trainable parameters");
  buckets_ = std::make_shared<GradBuckets>(group_, params_, options_);
  if (options_.broadcast_parameters) broadcast_parameters();
}

void DistributedDataParallel::broadcast_parameters() {
  // Every parameter, trainable or not (BatchNorm's moving statistics): ranks that start from
  // different initialisations would otherwise train different networks.
  std::vector<std::pair<Parameter, Work>> pending;
  for (auto& [name, p] : net_->named_parameters())
    pending.emplace_back(p, group_.ibroadcast(p.value(), 0));
  for (auto& [p, w] : pending) p.set_value(w.wait());
}

std::function<ValueAndGrad(const std::vector<Tensor>&)> DistributedDataParallel::value_and_grad(
    TensorFn loss_fn) {
  std::shared_ptr<GradBuckets> buckets = buckets_;
  // Eagerly each gradient goes to its bucket as the tape makes it final; while traced the hook
  // stays silent and the buckets are reduced by ops after backward (NOTE [Data parallelism in
  // graph mode]): an eager all-reduce in a trace would run once, and the compiled step would
  // replay its result as a constant.
  auto inner = spore::value_and_grad(std::move(loss_fn), GradPosition::none(), params_,
                                     std::nullopt, [buckets](size_t i, const Tensor& g) {
                                       if (!graph::is_tracing()) buckets->grad_ready(i, g);
                                     });
  return [inner = std::move(inner), buckets](const std::vector<Tensor>& inputs) {
    if (graph::is_tracing()) {
      ValueAndGrad vg = inner(inputs);
      vg.weight_grads = buckets->reduce_with_ops(vg.weight_grads);
      return vg;
    }
    buckets->begin_step();
    ValueAndGrad vg = inner(inputs);
    vg.weight_grads = buckets->finish();
    return vg;
  };
}

}  // namespace spore::dist
