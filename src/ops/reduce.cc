// Reductions: sum, mean, max, min, var, argmax, argmin.
//
// NOTE [Reduction dtypes]
// * sum: bool and integers give int64 (wrapping on overflow, like PyTorch); floats keep their
//   dtype.
// * mean, var: floating inputs only. An integer or bool input is an error (kDType) that asks
//   for a cast: silently picking a float dtype hides a precision choice from the caller
//   (NOTE [Type promotion]).
// * max, min: keep the dtype, bool included (any / all). NaN propagates.
// * argmax, argmin: int64, the index of the FIRST extreme; a NaN counts as the extreme (the first
//   NaN wins), like PyTorch.
// * float16/bfloat16 accumulate in at least float32 (the CPU uses float64) and round once.
// Empty reductions: sum gives 0, mean NaN, var NaN; max, min, argmax, argmin refuse (kValue),
// since an empty set has no extreme. var divides by max(0, count - correction), so a correction
// >= count gives inf (or NaN when every deviation is 0), like PyTorch.
#include "op_families.h"
#include "reduce_attrs.h"

namespace spore::ops {

namespace {

void require_floating(const InferArgs& a) {
  DType t = a.inputs[0].dtype();
  if (!is_floating(t))
    op_error(a.def, ErrorCode::kDType,
             std::string("needs a floating input, got ") + dtype_name(t) + a.inputs[0].shape().str() +
                 "; cast it first, e.g. cast(x, DType::kFloat32)");
}

void require_nonempty(const InferArgs& a, const std::vector<int>& axes) {
  const Shape& s = a.inputs[0].shape();
  for (int ax : axes)
    if (s[ax] == 0)
      op_error(a.def, ErrorCode::kValue,
               "cannot reduce over axis " + std::to_string(ax) + " of extent 0 (input shape " +
                   s.str() + "): an empty set has no extreme");
}

// Shared by sum/mean/max/min: attrs (axes, keepdims).
void infer_axes_keepdims(const InferArgs& a, Inference& out, DType out_dtype) {
  const Shape& s = a.inputs[0].shape();
  std::vector<int> axes = reduce_axes(a.def, a.attrs.ints(0), s.ndim());
  out.outputs[0] = {reduced_shape(s, axes, a.attrs.b(1)), out_dtype};
  out.compute = a.inputs[0].dtype();
}

void infer_sum(const InferArgs& a, Inference& out) {
  DType t = a.inputs[0].dtype();
  infer_axes_keepdims(a, out, is_floating(t) ? t : DType::kInt64);
}

void infer_mean(const InferArgs& a, Inference& out) {
  require_floating(a);
  infer_axes_keepdims(a, out, a.inputs[0].dtype());
}

void infer_extreme(const InferArgs& a, Inference& out) {
  infer_axes_keepdims(a, out, a.inputs[0].dtype());
  require_nonempty(a, reduce_axes(a.def, a.attrs.ints(0), a.inputs[0].ndim()));
}

// var: attrs (axes, correction, keepdims).
void infer_var(const InferArgs& a, Inference& out) {
  require_floating(a);
  const Shape& s = a.inputs[0].shape();
  std::vector<int> axes = reduce_axes(a.def, a.attrs.ints(0), s.ndim());
  int64_t correction = a.attrs.i(1);
  if (correction < 0)
    op_error(a.def, ErrorCode::kValue,
             "correction must be >= 0 (1: unbiased, 0: population), got " + std::to_string(correction));
  out.outputs[0] = {reduced_shape(s, axes, a.attrs.b(2)), a.inputs[0].dtype()};
  out.compute = a.inputs[0].dtype();
}

// argmax/argmin: attrs (axis or kArgAxisAll, keepdims).
void infer_arg(const InferArgs& a, Inference& out) {
  const Shape& s = a.inputs[0].shape();
  int64_t axis = a.attrs.i(0);
  bool keepdims = a.attrs.b(1);
  std::vector<int> axes;
  if (axis == kArgAxisAll) {
    for (int i = 0; i < s.ndim(); ++i) axes.push_back(i);
    if (s.numel() == 0)
      op_error(a.def, ErrorCode::kValue,
               "cannot take the index of an extreme of an empty tensor (shape " + s.str() + ")");
  } else {
    int ax = normalize_axis(axis, s.ndim(), a.def.name);
    if (s.ndim() > 0) axes.push_back(ax);
    require_nonempty(a, axes);
  }
  out.outputs[0] = {reduced_shape(s, axes, keepdims), DType::kInt64};
  out.compute = a.inputs[0].dtype();
}

const std::vector<AttrSpec> kAxesKeep = {{"axes", AttrKind::kInts}, {"keepdims", AttrKind::kBool}};

}  // namespace

void define_reduce_ops(OpTable& table) {
  define(table, OpId::k_sum, 1, kAxesKeep).infer = infer_sum;
  define(table, OpId::k_mean, 1, kAxesKeep).infer = infer_mean;
  define(table, OpId::k_max, 1, kAxesKeep).infer = infer_extreme;
  define(table, OpId::k_min, 1, kAxesKeep).infer = infer_extreme;
  define(table, OpId::k_var, 1,
         {{"axes", AttrKind::kInts}, {"correction", AttrKind::kInt}, {"keepdims", AttrKind::kBool}})
      .infer = infer_var;
  const std::vector<AttrSpec> arg = {{"axis", AttrKind::kInt}, {"keepdims", AttrKind::kBool}};
  define(table, OpId::k_argmax, 1, arg).infer = infer_arg;
  define(table, OpId::k_argmin, 1, arg).infer = infer_arg;
}

}  // namespace spore::ops
