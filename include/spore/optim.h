// Optimizers, learning-rate schedules, gradient clipping and dynamic loss scaling.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "spore/parameter.h"
#include "spore/tensor.h"

namespace spore::optim {

// ---- learning-rate schedules: lr as a function of the step about to be taken (0-based) ----
class LRSchedule {
 public:
  virtual ~LRSchedule() = default;
  virtual double lr(int64_t step) const = 0;
};
using LRSchedulePtr = std::shared_ptr<const LRSchedule>;

LRSchedulePtr constant_lr(double lr);
// lr * gamma^(step / step_size)
LRSchedulePtr step_lr(double lr, int64_t step_size, double gamma);
// Cosine from lr to min_lr over total_steps, then min_lr.
LRSchedulePtr cosine_lr(double lr, int64_t total_steps, double min_lr = 0);
// Linear ramp from 0 (exclusive) to the inner schedule's value over warmup_steps, then the inner
// schedule (which sees steps counted from the end of the warm-up).
LRSchedulePtr linear_warmup(int64_t warmup_steps, LRSchedulePtr after);

// ---- optimizers ----
class Optimizer {
 public:
  Optimizer(std::vector<Parameter> params, LRSchedulePtr lr, double weight_decay);
  virtual ~Optimizer() = default;

  // Applies one update from gradients given in the order of parameters(). Gradients are cast to
  // each parameter's dtype; shapes must match (kShape naming the parameter).
  void step(const std::vector<Tensor>& grads);
  void operator()(const std::vector<Tensor>& grads) { step(grads); }  // MindSpore spelling

  const std::vector<Parameter>& parameters() const { return params_; }
  int64_t steps_taken() const { return steps_; }
  double current_lr() const { return lr_->lr(steps_); }
  // Resuming from a checkpoint: the steps already taken (the schedule continues from there).
  void set_steps_taken(int64_t steps);

 protected:
  virtual void update(size_t index, const Parameter& p, const Tensor& grad, double lr) = 0;
  double weight_decay_;

 private:
  std::vector<Parameter> params_;
  LRSchedulePtr lr_;
  int64_t steps_ = 0;
};

// PyTorch's SGD; MindSpore's Momentum is SGD with momentum (dampening 0).
class SGD : public Optimizer {
 public:
  SGD(std::vector<Parameter> params, LRSchedulePtr lr, double momentum = 0, double weight_decay = 0,
      bool nesterov = false, double dampening = 0);
  SGD(std::vector<Parameter> params, double lr, double momentum = 0, double weight_decay = 0,
      bool nesterov = false, double dampening = 0)
      : SGD(std::move(params), constant_lr(lr), momentum, weight_decay, nesterov, dampening) {}

 protected:
  void update(size_t index, const Parameter& p, const Tensor& grad, double lr) override;

 private:
  double momentum_, dampening_;
  bool nesterov_;
  std::vector<Tensor> buffers_;
};

class Momentum : public SGD {
 public:
  Momentum(std::vector<Parameter> params, double lr, double momentum, double weight_decay = 0,
           bool use_nesterov = false)
      : SGD(std::move(params), lr, momentum, weight_decay, use_nesterov) {}
};

// Adam (L2 weight decay added to the gradient) and AdamW (decoupled decay), as PyTorch defines them.
class Adam : public Optimizer {
 public:
  // The moment estimates (PyTorch's exp_avg, exp_avg_sq), one per parameter; undefined before the
  // parameter's first update. load_moments restores them (a resumed run): kShape / kValue naming
  // the parameter when the count or a shape differs.
  const std::vector<Tensor>& exp_avg() const { return m_; }
  const std::vector<Tensor>& exp_avg_sq() const { return v_; }
  void load_moments(const std::vector<Tensor>& exp_avg, const std::vector<Tensor>& exp_avg_sq);

  Adam(std::vector<Parameter> params, LRSchedulePtr lr, double beta1 = 0.9, double beta2 = 0.999,
       double eps = 1e-8, double weight_decay = 0);
  Adam(std::vector<Parameter> params, double lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999,
       double eps = 1e-8, double weight_decay = 0)
      : Adam(std::move(params), constant_lr(lr), beta1, beta2, eps, weight_decay) {}

 protected:
  void update(size_t index, const Parameter& p, const Tensor& grad, double lr) override;
  bool decoupled_ = false;

 private:
  double beta1_, beta2_, eps_;
  std::vector<Tensor> m_, v_;
};

class AdamW : public Adam {
 public:
  AdamW(std::vector<Parameter> params, LRSchedulePtr lr, double beta1 = 0.9, double beta2 = 0.999,
        double eps = 1e-8, double weight_decay = 1e-2)
      : Adam(std::move(params), std::move(lr), beta1, beta2, eps, weight_decay) {
    decoupled_ = true;
  }
  AdamW(std::vector<Parameter> params, double lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999,
        double eps = 1e-8, double weight_decay = 1e-2)
      : AdamW(std::move(params), constant_lr(lr), beta1, beta2, eps, weight_decay) {}
};

// ---- gradient utilities ----
// Global L2 norm of all gradients (computed in float32, float64 for float64 gradients).
double global_norm(const std::vector<Tensor>& grads);
// Scales the gradients so that their global norm is at most max_norm; returns the norm before
// clipping. A non-finite norm leaves the gradients unchanged (the loss scaler skips that step).
double clip_grad_norm(std::vector<Tensor>& grads, double max_norm);
// True when every gradient is finite (no inf, no NaN).
bool all_finite(const std::vector<Tensor>& grads);

// Dynamic loss scaling for float16 training (PyTorch's GradScaler, MindSpore's
// DynamicLossScaleUpdateCell): multiply the loss by scale(); unscale() divides the gradients and
// reports whether they are finite; a step with inf/NaN gradients is skipped and the scale backs
// off; after growth_interval finite steps in a row the scale grows.
class DynamicLossScaler {
 public:
  explicit DynamicLossScaler(double init_scale = 65536.0, double growth_factor = 2.0,
                             double backoff_factor = 0.5, int64_t growth_interval = 2000);
  double scale() const { return scale_; }
  Tensor scale_loss(const Tensor& loss) const;
  // Unscales the gradients in place of the vector; returns false (and backs off) when any is not
  // finite, in which case the caller must skip the optimizer step.
  bool unscale(std::vector<Tensor>& grads);
  int64_t skipped_steps() const { return skipped_; }

 private:
  double scale_, growth_, backoff_;
  int64_t interval_, good_steps_ = 0, skipped_ = 0;
};

}  // namespace spore::optim
