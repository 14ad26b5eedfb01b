#include "spore/nn/normalization.h"

#include <algorithm>

#include "nn_util.h"
#include "spore/autograd.h"
#include "spore/nn/init.h"
#include "spore/ops.h"

namespace spore::nn {

BatchNorm::BatchNorm(int64_t num_features, double eps, double momentum, bool affine, DType dtype,
                     std::vector<int> accepted_ranks)
    : c_(num_features), eps_(eps), momentum_(momentum), affine_(affine), ranks_(std::move(accepted_ranks)) {
  const std::string n = "BatchNorm";
  detail::check_positive(n, "num_features", num_features);
  detail::check_floating_dtype(n, dtype);
  if (!(eps > 0)) throw Error(ErrorCode::kValue, n + ": eps must be > 0, got " + std::to_string(eps));
  if (!(momentum >= 0 && momentum <= 1))
    throw Error(ErrorCode::kValue, n + ": momentum must lie in [0, 1] (MindSpore's meaning: moving = momentum * "
                                       "moving + (1 - momentum) * batch), got " + std::to_string(momentum));
  if (affine) {
    gamma_ = register_parameter("gamma", init::ones({num_features}, dtype));
    beta_ = register_parameter("beta", init::zeros({num_features}, dtype));
  }
  moving_mean_ = register_parameter("moving_mean", init::zeros({num_features}, dtype), /*requires_grad=*/false);
  moving_var_ = register_parameter("moving_variance", init::ones({num_features}, dtype), /*requires_grad=*/false);
}

Tensor BatchNorm::construct(const Tensor& x) {
  detail::check_floating_input(name(), x);
  if (std::find(ranks_.begin(), ranks_.end(), x.ndim()) == ranks_.end()) {
    std::string want = ranks_.size() == 1 ? "[N, C, H, W]" : "[N, C] or [N, C, L]";
    throw Error(ErrorCode::kShape, name() + ": input shape " + x.shape().str() + " is not " + want);
  }
  if (x.shape()[1] != c_)
    throw Error(ErrorCode::kShape, name() + ": input shape " + x.shape().str() + " has " +
                                       std::to_string(x.shape()[1]) + " channels (axis 1), the layer has num_features = " +
                                       std::to_string(c_));
  std::vector<int64_t> axes{0}, bshape(x.ndim(), 1);
  for (int d = 2; d < x.ndim(); ++d) axes.push_back(d);
  bshape[1] = c_;  // statistics and affine parameters broadcast as [1, C, 1, ...]

  Tensor mean_b, inv_std;
  if (training()) {
    const int64_t n = x.numel() / c_;
    if (n < 2)
      throw Error(ErrorCode::kShape, name() + ": training needs more than one value per channel, input shape " +
                                         x.shape().str() + " has " + std::to_string(n) +
                                         "; use a larger batch or set_train(false)");
    mean_b = mean(x, axes, /*keepdims=*/true);
    Tensor var_b = var(x, axes, /*correction=*/0, /*keepdims=*/true);
    inv_std = rsqrt(add(var_b, eps_));
    {
      // NOTE [BatchNorm statistics]: the running update is state, not part of the function.
      NoGradGuard no_grad;
      const DType st = moving_mean_.value().dtype();
      Tensor bm = cast(reshape(mean_b, {c_}), st);
      Tensor bv = cast(mul(reshape(var_b, {c_}), (double)n / (double)(n - 1)), st);
      moving_mean_.set_value(add(mul(moving_mean_.value(), momentum_), mul(bm, 1 - momentum_)));
      moving_var_.set_value(add(mul(moving_var_.value(), momentum_), mul(bv, 1 - momentum_)));
    }
  } else {
    mean_b = reshape(param(moving_mean_), bshape);
    inv_std = rsqrt(add(reshape(param(moving_var_), bshape), eps_));
  }
  Tensor y = mul(sub(x, mean_b), inv_std);
  if (affine_) y = add(mul(y, reshape(param(gamma_), bshape)), reshape(param(beta_), bshape));
  return y;
}

LayerNorm::LayerNorm(std::vector<int64_t> normalized_shape, double eps, bool elementwise_affine, DType dtype)
    : shape_(std::move(normalized_shape)), eps_(eps), affine_(elementwise_affine) {
  const std::string n = "LayerNorm";
  if (shape_.empty()) throw Error(ErrorCode::kValue, n + ": normalized_shape is empty; give the trailing extents");
  for (int64_t d : shape_) detail::check_positive(n, "every normalized_shape extent", d);
  detail::check_floating_dtype(n, dtype);
  if (!(eps > 0)) throw Error(ErrorCode::kValue, n + ": eps must be > 0, got " + std::to_string(eps));
  if (affine_) {
    gamma_ = register_parameter("gamma", init::ones(shape_, dtype));
    beta_ = register_parameter("beta", init::zeros(shape_, dtype));
  }
}

Tensor LayerNorm::construct(const Tensor& x) {
  detail::check_floating_input("LayerNorm", x);
  const int k = (int)shape_.size();
  bool ok = x.ndim() >= k;
  for (int i = 0; ok && i < k; ++i) ok = x.shape()[x.ndim() - k + i] == shape_[i];
  if (!ok)
    throw Error(ErrorCode::kShape, "LayerNorm: input shape " + x.shape().str() + " does not end in normalized_shape " +
                                       detail::list_str(shape_));
  std::vector<int64_t> axes;
  for (int i = 0; i < k; ++i) axes.push_back(x.ndim() - k + i);
  Tensor mu = mean(x, axes, true);
  Tensor inv_std = rsqrt(add(var(x, axes, /*correction=*/0, true), eps_));
  Tensor y = mul(sub(x, mu), inv_std);
  if (affine_) y = add(mul(y, param(gamma_)), param(beta_));
  return y;
}

RMSNorm::RMSNorm(int64_t dim, double eps, DType dtype) : dim_(dim), eps_(eps) {
  detail::check_positive("RMSNorm", "dim", dim);
  detail::check_floating_dtype("RMSNorm", dtype);
  if (!(eps > 0)) throw Error(ErrorCode::kValue, "RMSNorm: eps must be > 0, got " + std::to_string(eps));
  weight_ = register_parameter("weight", init::ones({dim}, dtype));
}

Tensor RMSNorm::construct(const Tensor& x) {
  detail::check_floating_input("RMSNorm", x);
  if (x.ndim() == 0 || x.shape()[x.ndim() - 1] != dim_)
    throw Error(ErrorCode::kShape, "RMSNorm: input shape " + x.shape().str() + " does not end in dim = " +
                                       std::to_string(dim_));
  Tensor ms = mean(mul(x, x), {-1}, /*keepdims=*/true);
  return mul(mul(x, rsqrt(add(ms, eps_))), param(weight_));
}

Dropout::Dropout(double p, uint64_t seed) : p_(p), seed_(seed) {
  if (!(p >= 0 && p <= 1))
    throw Error(ErrorCode::kValue, "Dropout: p (the probability of zeroing) must lie in [0, 1], got " +
                                       std::to_string(p) + " (MindSpore 2.x takes p, not keep_prob)");
}

Tensor Dropout::construct(const Tensor& x) {
  detail::check_floating_input("Dropout", x);
  if (!training() || p_ == 0) return x;
  if (p_ == 1) return mul(x, 0.0);  // everything dropped; stays on the tape with a zero gradient
  const uint64_t call_seed = init::derive_seed(seed_, calls_++);
  // keep where u >= p: P(keep) = 1 - p for u uniform in [0, 1).
  Tensor u = random_uniform(x.shape().to_vector(), call_seed, 0, 1, DType::kFloat32);
  Tensor keep = ge(u, scalar_like(u, p_));
  return mul(mul(x, cast(keep, x.dtype())), 1.0 / (1.0 - p_));
}

}  // namespace spore::nn
