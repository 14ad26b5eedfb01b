#include <cmath>
#include <numbers>

#include "spore/error.h"
#include "spore/optim.h"

namespace spore::optim {

namespace {
class Constant final : public LRSchedule {
 public:
  explicit Constant(double lr) : lr_(lr) {}
  double lr(int64_t) const override { return lr_; }

 private:
  double lr_;
};

class Step final : public LRSchedule {
 public:
  Step(double lr, int64_t size, double gamma) : lr_(lr), size_(size), gamma_(gamma) {}
  double lr(int64_t step) const override { return lr_ * std::pow(gamma_, (double)(step / size_)); }

 private:
  double lr_;
  int64_t size_;
  double gamma_;
};

class Cosine final : public LRSchedule {
 public:
  Cosine(double lr, int64_t total, double min_lr) : lr_(lr), total_(total), min_(min_lr) {}
  double lr(int64_t step) const override {
    if (step >= total_) return min_;
    double t = (double)step / (double)total_;
    return min_ + 0.5 * (lr_ - min_) * (1 + std::cos(std::numbers::pi * t));
  }

 private:
  double lr_;
  int64_t total_;
  double min_;
};

class Warmup final : public LRSchedule {
 public:
  Warmup(int64_t steps, LRSchedulePtr after) : steps_(steps), after_(std::move(after)) {}
  double lr(int64_t step) const override {
    if (step < steps_) return after_->lr(0) * (double)(step + 1) / (double)steps_;
    return after_->lr(step - steps_);
  }

 private:
  int64_t steps_;
  LRSchedulePtr after_;
};

void check_lr(double lr, const char* who) {
  if (!(lr >= 0) || !std::isfinite(lr))
    throw Error(ErrorCode::kValue, std::string(who) + ": learning rate must be finite and >= 0, got " + std::to_string(lr));
}
}  // namespace

LRSchedulePtr constant_lr(double lr) {
  check_lr(lr, "constant_lr");
  return std::make_shared<Constant>(lr);
}
LRSchedulePtr step_lr(double lr, int64_t step_size, double gamma) {
  check_lr(lr, "step_lr");
  if (step_size < 1) throw Error(ErrorCode::kValue, "step_lr: step_size must be >= 1");
  return std::make_shared<Step>(lr, step_size, gamma);
}
LRSchedulePtr cosine_lr(double lr, int64_t total_steps, double min_lr) {
  check_lr(lr, "cosine_lr");
  if (total_steps < 1) throw Error(ErrorCode::kValue, "cosine_lr: total_steps must be >= 1");
  return std::make_shared<Cosine>(lr, total_steps, min_lr);
}
LRSchedulePtr linear_warmup(int64_t warmup_steps, LRSchedulePtr after) {
  if (warmup_steps < 0 || !after) throw Error(ErrorCode::kValue, "linear_warmup: needs warmup_steps >= 0 and a schedule");
  return std::make_shared<Warmup>(warmup_steps, std::move(after));
}

}  // namespace spore::optim
