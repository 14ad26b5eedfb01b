// Normalisations: softmax and log_softmax along one axis.
//
// Floating inputs only: an integer or bool input is an error (kDType) asking for a cast, for the
// same reason as mean (NOTE [Reduction dtypes] in reduce.cc). The output keeps the input's shape
// and dtype; float16/bfloat16 compute in float32. Both are numerically stable: the kernels
// subtract the maximum along the axis first, and log_softmax is x - max - log(sum(exp(x - max))),
// never log(softmax(x)), which would lose everything below float's smallest normal.
// Backward rules: NOTE [Softmax gradients] below.
#include "op_families.h"
#include "spore/ops.h"

namespace spore::ops {

namespace {
void infer_softmax(const InferArgs& a, Inference& out) {
  const Tensor& x = a.inputs[0];
  if (!is_floating(x.dtype()))
    op_error(a.def, ErrorCode::kDType,
             std::string("needs a floating input, got ") + dtype_name(x.dtype()) + x.shape().str() +
                 "; cast it first, e.g. cast(x, DType::kFloat32)");
  normalize_axis(a.attrs.i(0), x.ndim(), a.def.name);  // throws kIndex when out of range
  infer_same_as_input(a, out);
}

// NOTE [Softmax gradients]
// Both rules use only the forward output y (written with ops, like every rule):
// * softmax: dx = y * (g - sum(g * y, axis, keepdims));
// * log_softmax: dx = g - exp(y) * sum(g, axis, keepdims). exp(y) is the softmax, recovered
//   without dividing by anything, so it stays finite where softmax underflows to 0 (1/softmax
//   would not).
std::vector<Tensor> softmax_backward(const BackwardArgs& b) {
  const Tensor &y = b.outputs[0], &g = b.grad_outputs[0];
  const std::vector<int64_t> axis{b.attrs.i(0)};
  return {mul(y, sub(g, sum(mul(g, y), axis, /*keepdims=*/true)))};
}

std::vector<Tensor> log_softmax_backward(const BackwardArgs& b) {
  const Tensor &y = b.outputs[0], &g = b.grad_outputs[0];
  const std::vector<int64_t> axis{b.attrs.i(0)};
  return {sub(g, mul(exp(y), sum(g, axis, /*keepdims=*/true)))};
}
}  // namespace

void define_norm_ops(OpTable& table) {
  OpDef& sm = define(table, OpId::k_softmax, 1, {{"axis", AttrKind::kInt}});
  sm.facts = not_elementwise();
  sm.infer = infer_softmax;
  sm.backward = &softmax_backward;
  OpDef& lsm = define(table, OpId::k_log_softmax, 1, {{"axis", AttrKind::kInt}});
  lsm.facts = not_elementwise();
  lsm.infer = infer_softmax;
  lsm.backward = &log_softmax_backward;
}

}  // namespace spore::ops
