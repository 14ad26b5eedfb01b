#include "spore/nn/losses.h"

#include "spore/ops.h"

namespace spore::nn {

namespace {

void check_reduction(const std::string& loss, const std::string& reduction) {
  if (reduction != "mean" && reduction != "sum" && reduction != "none")
    throw Error(ErrorCode::kValue, loss + ": reduction \"" + reduction + "\" is not one of \"mean\", \"sum\", \"none\"");
}

void check_floating(const std::string& loss, const char* what, const Tensor& t) {
  if (!is_floating(t.dtype()))
    throw Error(ErrorCode::kDType, loss + ": " + what + " are " + dtype_name(t.dtype()) + " " + t.shape().str() +
                                       "; they must be floating (float16, bfloat16, float32 or float64)");
}

void check_same_shape(const std::string& loss, const Tensor& logits, const Tensor& labels) {
  if (logits.shape() != labels.shape())
    throw Error(ErrorCode::kShape, loss + ": logits shape " + logits.shape().str() + " and labels shape " +
                                       labels.shape().str() + " differ; they must be equal (no broadcasting)");
}

Tensor reduce(const Tensor& per_element, const std::string& reduction) {
  if (reduction == "none") return per_element;
  if (reduction == "sum") return sum(per_element);
  return mean(per_element);
}

Tensor elementwise_loss(const std::string& loss, const Tensor& logits, const Tensor& labels,
                        const std::string& reduction, bool squared) {
  check_reduction(loss, reduction);
  check_floating(loss, "logits", logits);
  check_floating(loss, "labels", labels);
  check_same_shape(loss, logits, labels);
  Tensor d = sub(logits, labels);
  return reduce(squared ? mul(d, d) : abs(d), reduction);
}

// Class-index losses share this: picks -log_probs[n, label[n], ...] along axis 1, optionally
// mixed with the label-smoothing term, with ignore_index entries zeroed and left out of the mean.
Tensor class_index_loss(const std::string& loss, const Tensor& log_probs, const Tensor& labels,
                        const std::string& reduction, double smoothing, int64_t ignore_index) {
  const Tensor& lp = log_probs;
  Shape want = lp.shape();
  want.erase(1);
  if (labels.dtype() != DType::kInt32 && labels.dtype() != DType::kInt64) {
    if (is_floating(labels.dtype()) && labels.shape() == want)
      throw Error(ErrorCode::kDType, loss + ": labels " + labels.shape().str() + " are " +
                                         dtype_name(labels.dtype()) + "; class indices must be int32 or int64 (cast "
                                         "them), or give class probabilities with the logits' shape " +
                                         lp.shape().str());
    throw Error(ErrorCode::kDType, loss + ": labels are " + dtype_name(labels.dtype()) + " " +
                                       labels.shape().str() + "; class indices must be int32 or int64");
  }
  if (labels.shape() != want)
    throw Error(ErrorCode::kShape, loss + ": logits shape " + lp.shape().str() + " and labels shape " +
                                       labels.shape().str() + " do not fit; class-index labels need shape " +
                                       want.str() + " (the logits without the class axis 1)");
  Tensor valid = ne(labels, scalar_like(labels, (double)ignore_index));
  Tensor safe = where(valid, labels, scalar_like(labels, 0));
  Tensor picked;
  try {
    picked = squeeze(gather(lp, 1, unsqueeze(safe, 1)), 1);
  } catch (const Error& e) {
    // gather names itself; say which loss and what the labels must be.
    throw Error(e.code(), loss + ": a label lies outside [0, " + std::to_string(lp.shape()[1]) + ") for " +
                              std::to_string(lp.shape()[1]) + " classes (ignore_index " +
                              std::to_string(ignore_index) + " excepted): " + e.what());
  }
  Tensor per = neg(picked);
  if (smoothing > 0) per = add(mul(per, 1 - smoothing), mul(neg(mean(lp, {1})), smoothing));
  per = where(valid, per, scalar_like(per, 0));
  if (reduction == "none") return per;
  Tensor total = sum(per);
  if (reduction == "sum") return total;
  return div(total, sum(cast(valid, per.dtype())));
}

// [C] logits become [1, C] (and 0-d labels [1]) so that every path sees a class axis 1.
struct Batched {
  Tensor logits, labels;
  bool unbatched;
};
Batched add_batch_axis(const std::string& loss, const Tensor& logits, const Tensor& labels) {
  if (logits.ndim() == 0)
    throw Error(ErrorCode::kShape, loss + ": logits are 0-d; they need a class axis ([C] or [N, C, ...]), labels shape " +
                                       labels.shape().str());
  if (logits.ndim() != 1) return {logits, labels, false};
  return {unsqueeze(logits, 0), labels.ndim() == 0 ? reshape(labels, {1}) : unsqueeze(labels, 0), true};
}

Tensor unbatch(const Tensor& t, bool unbatched, const std::string& reduction) {
  return unbatched && reduction == "none" ? reshape(t, {}) : t;
}

}  // namespace

Tensor mse_loss(const Tensor& logits, const Tensor& labels, const std::string& reduction) {
  return elementwise_loss("mse_loss", logits, labels, reduction, true);
}

Tensor l1_loss(const Tensor& logits, const Tensor& labels, const std::string& reduction) {
  return elementwise_loss("l1_loss", logits, labels, reduction, false);
}

namespace {

Tensor cross_entropy_impl(const std::string& loss, const Tensor& logits_in, const Tensor& labels_in,
                          const std::string& reduction, double ls, int64_t ignore_index) {
  check_reduction(loss, reduction);
  check_floating(loss, "logits", logits_in);
  if (!(ls >= 0 && ls <= 1))
    throw Error(ErrorCode::kValue, loss + ": label_smoothing must lie in [0, 1], got " + std::to_string(ls));
  if (is_floating(labels_in.dtype()) && labels_in.shape() == logits_in.shape()) {
    // Class probabilities.
    auto [logits, labels, unbatched] = add_batch_axis(loss, logits_in, labels_in);
    Tensor lp = log_softmax(logits, 1);
    Tensor target = labels;
    if (ls > 0) target = add(mul(labels, 1 - ls), ls / (double)logits.shape()[1]);
    Tensor per = neg(sum(mul(target, lp), {1}));
    return unbatch(reduce(per, reduction), unbatched, reduction);
  }
  auto [logits, labels, unbatched] = add_batch_axis(loss, logits_in, labels_in);
  if (is_floating(labels_in.dtype()) && labels_in.ndim() == logits_in.ndim())
    throw Error(ErrorCode::kShape, loss + ": logits shape " + logits_in.shape().str() + " and labels shape " +
                                       labels_in.shape().str() + " differ; probability labels need the logits' shape");
  Tensor per = class_index_loss(loss, log_softmax(logits, 1), labels, reduction, ls, ignore_index);
  return unbatch(per, unbatched, reduction);
}

Tensor nll_impl(const std::string& loss, const Tensor& log_probs, const Tensor& labels_in,
                const std::string& reduction, int64_t ignore_index) {
  check_reduction(loss, reduction);
  check_floating(loss, "log_probs", log_probs);
  auto [lp, labels, unbatched] = add_batch_axis(loss, log_probs, labels_in);
  return unbatch(class_index_loss(loss, lp, labels, reduction, 0, ignore_index), unbatched, reduction);
}

Tensor bce_impl(const std::string& loss, const Tensor& x, const Tensor& y, const std::string& reduction) {
  check_reduction(loss, reduction);
  check_floating(loss, "logits", x);
  check_floating(loss, "labels", y);
  check_same_shape(loss, x, y);
  // max(x, 0) - x*y + log(1 + exp(-|x|)), written per sign of x with the other branch's input
  // clamped to 0: no exp overflows in either branch (so no inf * 0 = NaN in the gradient of the
  // branch where() discards), and the derivative at x = 0 is sigmoid(0) - y exactly, which the
  // max/abs form would leave to the subgradient conventions of relu and abs.
  Tensor zero = scalar_like(x, 0);
  Tensor pos = ge(x, zero);
  Tensor xp = where(pos, x, zero);  // x for x >= 0, else 0
  Tensor xn = where(pos, zero, x);  // x for x < 0, else 0
  Tensor softplus = where(pos, add(xp, log(add(exp(neg(xp)), 1.0))), log(add(exp(xn), 1.0)));
  return reduce(sub(softplus, mul(x, y)), reduction);
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& labels, const std::string& reduction,
                     double label_smoothing, int64_t ignore_index) {
  return cross_entropy_impl("cross_entropy", logits, labels, reduction, label_smoothing, ignore_index);
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& labels, const std::string& reduction, int64_t ignore_index) {
  return nll_impl("nll_loss", log_probs, labels, reduction, ignore_index);
}

Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& labels, const std::string& reduction) {
  return bce_impl("binary_cross_entropy_with_logits", logits, labels, reduction);
}

LossBase::LossBase(std::string reduction, const std::string& loss) : reduction_(std::move(reduction)) {
  check_reduction(loss, reduction_);
}

Tensor LossBase::construct(const Tensor& x) {
  throw Error(ErrorCode::kValue, name() + ": a loss takes (logits, labels); call it with two tensors");
}

Tensor LossBase::operator()(const Tensor& logits, const Tensor& labels) {
  auto lowered = [&](const Tensor& t) {
    auto c = compute_dtype();
    return c && is_floating(t.dtype()) && t.dtype() != *c ? cast(t, *c) : t;
  };
  return forward(lowered(logits), lowered(labels));
}

Tensor MSELoss::forward(const Tensor& logits, const Tensor& labels) {
  return elementwise_loss(name(), logits, labels, reduction_, true);
}

Tensor L1Loss::forward(const Tensor& logits, const Tensor& labels) {
  return elementwise_loss(name(), logits, labels, reduction_, false);
}

CrossEntropyLoss::CrossEntropyLoss(std::string reduction, double label_smoothing, int64_t ignore_index)
    : LossBase(std::move(reduction), "CrossEntropyLoss"), label_smoothing_(label_smoothing), ignore_index_(ignore_index) {
  if (!(label_smoothing >= 0 && label_smoothing <= 1))
    throw Error(ErrorCode::kValue, "CrossEntropyLoss: label_smoothing must lie in [0, 1], got " +
                                       std::to_string(label_smoothing));
}

Tensor CrossEntropyLoss::forward(const Tensor& logits, const Tensor& labels) {
  return cross_entropy_impl(name(), logits, labels, reduction_, label_smoothing_, ignore_index_);
}

Tensor NLLLoss::forward(const Tensor& logits, const Tensor& labels) {
  return nll_impl(name(), logits, labels, reduction_, ignore_index_);
}

Tensor BCEWithLogitsLoss::forward(const Tensor& logits, const Tensor& labels) {
  return bce_impl(name(), logits, labels, reduction_);
}

}  // namespace spore::nn
