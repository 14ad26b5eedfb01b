// Gradient norms, clipping and dynamic loss scaling.
#include <cmath>

#include "spore/autograd.h"
#include "spore/ops.h"
#include "spore/optim.h"

namespace spore::optim {

namespace {
DType acc_dtype(const Tensor& g) { return g.dtype() == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32; }
}  // namespace

double global_norm(const std::vector<Tensor>& grads) {
  NoGradGuard no_grad;
  double total = 0;
  for (const Tensor& g : grads) {
    if (!g.defined()) continue;
    Tensor x = cast(g, acc_dtype(g));
    total += sum(mul(x, x)).item<double>();
  }
  return std::sqrt(total);
}

double clip_grad_norm(std::vector<Tensor>& grads, double max_norm) {
  if (!(max_norm > 0)) throw Error(ErrorCode::kValue, "clip_grad_norm: max_norm must be > 0");
  double norm = global_norm(grads);
  if (!std::isfinite(norm) || norm <= max_norm) return norm;
  NoGradGuard no_grad;
  double factor = max_norm / (norm + 1e-6);
  for (Tensor& g : grads)
    if (g.defined()) g = mul(g, factor);
  return norm;
}

bool all_finite(const std::vector<Tensor>& grads) {
  NoGradGuard no_grad;
  for (const Tensor& g : grads) {
    if (!g.defined() || !is_floating(g.dtype())) continue;
    // inf and NaN both survive a sum of absolute values as inf or NaN.
    if (!std::isfinite(sum(abs(cast(g, acc_dtype(g)))).item<double>())) return false;
  }
  return true;
}

DynamicLossScaler::DynamicLossScaler(double init_scale, double growth_factor, double backoff_factor,
                                     int64_t growth_interval)
    : scale_(init_scale), growth_(growth_factor), backoff_(backoff_factor), interval_(growth_interval) {
  if (!(init_scale > 0) || !(growth_factor > 1) || !(backoff_factor > 0 && backoff_factor < 1) || growth_interval < 1)
    throw Error(ErrorCode::kValue,
                "DynamicLossScaler: needs init_scale > 0, growth_factor > 1, 0 < backoff_factor < 1, "
                "growth_interval >= 1");
}

Tensor DynamicLossScaler::scale_loss(const Tensor& loss) const { return mul(loss, scale_); }

bool DynamicLossScaler::unscale(std::vector<Tensor>& grads) {
  if (!all_finite(grads)) {
    scale_ *= backoff_;
    good_steps_ = 0;
    ++skipped_;
    return false;
  }
  NoGradGuard no_grad;
  double inv = 1.0 / scale_;
  for (Tensor& g : grads)
    if (g.defined()) g = mul(cast(g, acc_dtype(g)), inv);
  if (++good_steps_ >= interval_) {
    scale_ *= growth_;
    good_steps_ = 0;
  }
  return true;
}

}  // namespace spore::optim
