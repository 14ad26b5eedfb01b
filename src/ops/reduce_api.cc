// Public API of the reduce family (include/spore/ops.h): thin calls into the dispatcher.
#include "reduce_attrs.h"
#include "spore/op_registry.h"
#include "spore/ops.h"

namespace spore {

Tensor sum(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  return dispatch1(OpId::k_sum, {x}, Attrs::of(axes, keepdims));
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
