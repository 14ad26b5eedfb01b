// Normalisations: softmax and log_softmax along one axis.
//
// Floating inputs only: an integer or bool input is an error (kDType) asking for a cast, for the
// same reason as mean (NOTE [Reduction dtypes] in reduce.cc). The output keeps the input's shape
// and dtype; float16/bfloat16 compute in float32. Both are numerically stable: the kernels
// subtract the maximum along the axis first, and log_softmax is x - max - log(sum(exp(x - max))),
// never log(softmax(x)), which would lose everything below float's smallest normal.
#include "op_families.h"

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
}  // namespace

void define_norm_ops(OpTable& table) {
  define(table, OpId::k_softmax, 1, {{"axis", AttrKind::kInt}}).infer = infer_softmax;
  define(table, OpId::k_log_softmax, 1, {{"axis", AttrKind::kInt}}).infer = infer_softmax;
}

}  // namespace spore::ops
