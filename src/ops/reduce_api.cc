// Public API of the reduce family (include/spore/ops.h): thin calls into the dispatcher, and
// sum_to, the one composite (the reduction shared by the tape and the broadcast ops' rules).
#include "reduce_attrs.h"
#include "spore/op_registry.h"
#include "spore/ops.h"

namespace spore {

Tensor sum(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  return dispatch1(OpId::k_sum, {x}, Attrs::of(axes, keepdims));
}
Tensor sum_to(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  int lead = g.ndim() - shape.ndim();
  if (lead < 0)
    throw Error(ErrorCode::kShape, "sum_to: " + g.shape().str() + " has fewer axes than " + shape.str());
  std::vector<int64_t> axes;
  for (int i = 0; i < g.ndim(); ++i)
    if (i < lead || (shape[i - lead] == 1 && g.shape()[i] != 1)) axes.push_back(i);
  // Only leading axes (a bias's gradient): summing them away gives the shape at once.
  const bool only_leading = !axes.empty() && axes.back() == (int64_t)axes.size() - 1 && (int64_t)axes.size() == lead;
  Tensor r = axes.empty() ? g : sum(g, axes, /*keepdims=*/!only_leading);
  return r.shape() == shape ? r : reshape(r, shape.to_vector());
}

Tensor mean(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  return dispatch1(OpId::k_mean, {x}, Attrs::of(axes, keepdims));
}
Tensor max(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  return dispatch1(OpId::k_max, {x}, Attrs::of(axes, keepdims));
}
Tensor min(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  return dispatch1(OpId::k_min, {x}, Attrs::of(axes, keepdims));
}
Tensor var(const Tensor& x, const std::vector<int64_t>& axes, int64_t correction, bool keepdims) {
  return dispatch1(OpId::k_var, {x}, Attrs::of(axes, correction, keepdims));
}
Tensor argmax(const Tensor& x, std::optional<int64_t> axis, bool keepdims) {
  return dispatch1(OpId::k_argmax, {x}, Attrs{axis.value_or(ops::kArgAxisAll), keepdims});
}
Tensor argmin(const Tensor& x, std::optional<int64_t> axis, bool keepdims) {
  return dispatch1(OpId::k_argmin, {x}, Attrs{axis.value_or(ops::kArgAxisAll), keepdims});
}

}  // namespace spore
