// Optimizers run the fused update ops (NOTE [In-place update ops]) with no tape attached.
#include <cmath>

#include "spore/autograd.h"
#include "spore/jit.h"
#include "spore/op_registry.h"
#include "spore/ops.h"
#include "spore/optim.h"

namespace spore::optim {

namespace {
DType state_dtype(DType param) { return param == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32; }
Tensor zeros_state(const Parameter& p) {
  const Tensor& v = p.value();
  return full(v.shape().to_vector(), 0.0, state_dtype(v.dtype()), v.device());
}
}  // namespace

Optimizer::Optimizer(std::vector<Parameter> params, LRSchedulePtr lr, double weight_decay)
    : weight_decay_(weight_decay), params_(std::move(params)), lr_(std::move(lr)) {
  if (params_.empty())
    throw Error(ErrorCode::kValue, "optimizer: the parameter list is empty; pass net.trainable_params()");
  if (!lr_) throw Error(ErrorCode::kValue, "optimizer: no learning-rate schedule");
  if (!(weight_decay >= 0)) throw Error(ErrorCode::kValue, "optimizer: weight_decay must be >= 0");
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].defined()) throw Error(ErrorCode::kValue, "optimizer: parameter " + std::to_string(i) + " is empty");
    if (!is_floating(params_[i].value().dtype()))
      throw Error(ErrorCode::kDType, "optimizer: parameter '" + params_[i].name() + "' is " +
                                         dtype_name(params_[i].value().dtype()) + "; only floating parameters train");
    for (size_t j = 0; j < i; ++j)
      if (params_[j].same_as(params_[i]))
        throw Error(ErrorCode::kValue, "optimizer: parameter '" + params_[i].name() + "' is listed twice");
  }
}

void Optimizer::step(const std::vector<Tensor>& grads) {
  if (grads.size() != params_.size())
    throw Error(ErrorCode::kValue, "optimizer.step: " + std::to_string(grads.size()) + " gradients for " +
                                       std::to_string(params_.size()) + " parameters");
  NoGradGuard no_grad;
  double lr = lr_->lr(steps_);
  for (size_t i = 0; i < params_.size(); ++i) {
    const Parameter& p = params_[i];
    Tensor g = grads[i];
    if (!g.defined()) continue;  // no gradient: the parameter keeps its value
    if (g.shape() != p.value().shape())
      throw Error(ErrorCode::kShape, "optimizer.step: gradient " + std::to_string(i) + " has shape " +
                                         g.shape().str() + ", parameter '" + p.name() + "' has " +
                                         p.value().shape().str());
    if (g.dtype() != p.value().dtype()) g = cast(g, p.value().dtype());
    if (g.device() != p.value().device()) g = g.to(p.value().device());
    update(i, p, g.contiguous(), lr);
  }
  ++steps_;
  // NOTE [Host state in traces]: a compiled training step advances the count at each run.
  graph::on_each_run([this] { ++steps_; });
}

void Optimizer::set_steps_taken(int64_t steps) {
  if (steps < 0) throw Error(ErrorCode::kValue, "optimizer: steps taken must be >= 0");
  steps_ = steps;
}

SGD::SGD(std::vector<Parameter> params, LRSchedulePtr lr, double momentum, double weight_decay,
         bool nesterov, double dampening)
    : Optimizer(std::move(params), std::move(lr), weight_decay),
      momentum_(momentum),
      dampening_(dampening),
      nesterov_(nesterov) {
  if (!(momentum >= 0)) throw Error(ErrorCode::kValue, "SGD: momentum must be >= 0");
  if (nesterov && (momentum <= 0 || dampening != 0))
    throw Error(ErrorCode::kValue, "SGD: Nesterov momentum needs momentum > 0 and dampening 0");
  buffers_.resize(parameters().size());
}

void SGD::update(size_t i, const Parameter& p, const Tensor& g, double lr) {
  bool first = !buffers_[i].defined();
  if (first) buffers_[i] = zeros_state(p);
  Tensor ins[3] = {p.value(), g, buffers_[i]};
  graph::bind_next_op_attrs([this] {
    return Attrs::of(current_lr(), momentum_, dampening_, weight_decay_, nesterov_, false);
  });
  dispatch(OpId::k_sgd_update, ins,
           Attrs::of(lr, momentum_, dampening_, weight_decay_, nesterov_, first));
}

Adam::Adam(std::vector<Parameter> params, LRSchedulePtr lr, double beta1, double beta2, double eps,
           double weight_decay)
    : Optimizer(std::move(params), std::move(lr), weight_decay), beta1_(beta1), beta2_(beta2), eps_(eps) {
  if (!(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1))
    throw Error(ErrorCode::kValue, "Adam: betas must lie in [0, 1)");
  if (!(eps > 0)) throw Error(ErrorCode::kValue, "Adam: eps must be > 0");
  m_.resize(parameters().size());
  v_.resize(parameters().size());
}

void Adam::load_moments(const std::vector<Tensor>& exp_avg, const std::vector<Tensor>& exp_avg_sq) {
  if (exp_avg.size() != m_.size() || exp_avg_sq.size() != v_.size())
    throw Error(ErrorCode::kValue, "Adam.load_moments: " + std::to_string(exp_avg.size()) + " moments for " +
                                       std::to_string(m_.size()) + " parameters");
  for (size_t i = 0; i < m_.size(); ++i) {
    const Parameter& p = parameters()[i];
    for (const Tensor* t : {&exp_avg[i], &exp_avg_sq[i]})
      if (t->defined() && t->shape() != p.value().shape())
        throw Error(ErrorCode::kShape, "Adam.load_moments: parameter '" + p.name() + "' has shape " +
                                           p.value().shape().str() + ", its moment " + t->shape().str());
  }
  for (size_t i = 0; i < m_.size(); ++i) {
    // The update op writes its moments in place: a copy, never the caller's tensors.
    const DType d = state_dtype(parameters()[i].value().dtype());
    m_[i] = exp_avg[i].defined() ? cast(exp_avg[i], d).clone() : Tensor();
    v_[i] = exp_avg_sq[i].defined() ? cast(exp_avg_sq[i], d).clone() : Tensor();
  }
}

void Adam::update(size_t i, const Parameter& p, const Tensor& g, double lr) {
  if (!m_[i].defined()) {
    m_[i] = zeros_state(p);
    v_[i] = zeros_state(p);
  }
  Tensor ins[4] = {p.value(), g, m_[i], v_[i]};
  graph::bind_next_op_attrs([this] {
    return Attrs::of(current_lr(), beta1_, beta2_, eps_, weight_decay_, int64_t{steps_taken() + 1}, decoupled_);
  });
  dispatch(OpId::k_adam_update, ins,
           Attrs::of(lr, beta1_, beta2_, eps_, weight_decay_, int64_t{steps_taken() + 1}, decoupled_));
}

}  // namespace spore::optim
