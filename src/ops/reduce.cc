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
// Backward rules: NOTE [Reduction gradients] below.
#include <algorithm>

#include "op_families.h"
#include "reduce_attrs.h"
#include "spore/ops.h"

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

// ---- backward rules (NOTE [Reduction gradients]) -------------------------------------------
//
// NOTE [Reduction gradients]
// Written with ops (NOTE [Elementwise gradients] in elementwise.cc). Each rule first reshapes
// the output gradient to the keepdims form (the reduced axes kept with extent 1), so that it
// broadcasts against the input whatever keepdims was:
// * sum: that gradient expanded over the reduced axes (a broadcast view, no copy);
// * mean: the same divided by the number of reduced elements;
// * max, min: the gradient goes to the elements equal to the result, split evenly among ties
//   (torch.amax/amin). A NaN result matches no element, so its slice gets NaN (0/0);
// * var: g * 2 * (x - mean) / max(0, count - correction), the forward's divisor, so a correction
//   >= count gives inf/NaN gradients as the forward gives inf/NaN;
// * argmax, argmin: integer outputs, never recorded by the tape, so no rule.
// Integer and bool inputs get no gradient (only floating tensors are differentiated).

namespace {

using Grads = std::vector<Tensor>;

std::vector<int> axes_of(OpId id, const Tensor& x, const Attrs& attrs) {
  return reduce_axes(op_def(id), attrs.ints(0), x.ndim());
}

int64_t count_of(const Shape& s, const std::vector<int>& axes) {
  int64_t n = 1;
  for (int ax : axes) n *= s[ax];
  return n;
}

// The gradient of a reduction's output in keepdims form.
Tensor keepdims_form(const Tensor& g, const Shape& in, const std::vector<int>& axes) {
  if (g.ndim() == 0) return g;  // a full reduction: the 0-d gradient broadcasts as it is
  const Shape k = reduced_shape(in, axes, /*keepdims=*/true);
  return g.shape() == k ? g : reshape(g, k.to_vector());
}

Grads sum_backward(const BackwardArgs& b) {
  const Tensor& x = b.inputs[0];
  if (!is_floating(x.dtype())) return {Tensor()};
  const Tensor gk = keepdims_form(b.grad_outputs[0], x.shape(), axes_of(OpId::k_sum, x, b.attrs));
  return {expand(gk, x.shape().to_vector())};
}

Grads mean_backward(const BackwardArgs& b) {
  const Tensor& x = b.inputs[0];
  const std::vector<int> axes = axes_of(OpId::k_mean, x, b.attrs);
  const Tensor gk = keepdims_form(b.grad_outputs[0], x.shape(), axes);
  return {expand(div(gk, (double)count_of(x.shape(), axes)), x.shape().to_vector())};
}

Grads extreme_backward(const BackwardArgs& b, OpId id) {
  const Tensor& x = b.inputs[0];
  if (!is_floating(x.dtype())) return {Tensor()};
  const Tensor& g = b.grad_outputs[0];
  const std::vector<int> axes = axes_of(id, x, b.attrs);
  const Tensor hit = cast(eq(x, keepdims_form(b.outputs[0], x.shape(), axes)), g.dtype());
  const Tensor ties = sum(hit, std::vector<int64_t>(axes.begin(), axes.end()), /*keepdims=*/true);
  return {mul(hit, div(keepdims_form(g, x.shape(), axes), ties))};
}
Grads max_backward(const BackwardArgs& b) { return extreme_backward(b, OpId::k_max); }
Grads min_backward(const BackwardArgs& b) { return extreme_backward(b, OpId::k_min); }

Grads var_backward(const BackwardArgs& b) {
  const Tensor& x = b.inputs[0];
  const std::vector<int> axes = axes_of(OpId::k_var, x, b.attrs);
  const int64_t divisor = std::max<int64_t>(0, count_of(x.shape(), axes) - b.attrs.i(1));
  const Tensor centred = sub(x, mean(x, std::vector<int64_t>(axes.begin(), axes.end()), true));
  const Tensor gk = keepdims_form(b.grad_outputs[0], x.shape(), axes);
  return {mul(mul(centred, gk), 2.0 / (double)divisor)};
}

}  // namespace

void define_reduce_ops(OpTable& table) {
  auto def = [&](OpId id, std::vector<AttrSpec> attrs, InferFn infer, BackwardFn backward) {
    OpDef& d = define(table, id, 1, std::move(attrs));
    d.facts = not_elementwise();
    d.infer = infer;
    d.backward = backward;
  };
  def(OpId::k_sum, kAxesKeep, infer_sum, &sum_backward);
  def(OpId::k_mean, kAxesKeep, infer_mean, &mean_backward);
  def(OpId::k_max, kAxesKeep, infer_extreme, &max_backward);
  def(OpId::k_min, kAxesKeep, infer_extreme, &min_backward);
  def(OpId::k_var,
      {{"axes", AttrKind::kInts}, {"correction", AttrKind::kInt}, {"keepdims", AttrKind::kBool}},
      infer_var, &var_backward);
  const std::vector<AttrSpec> arg = {{"axis", AttrKind::kInt}, {"keepdims", AttrKind::kBool}};
  for (OpId id : {OpId::k_argmax, OpId::k_argmin}) {  // int64 indices: no gradient
    OpDef& d = define(table, id, 1, arg);
    d.facts = not_elementwise();
    d.infer = infer_arg;
    d.differentiable = false;
  }
}

}  // namespace spore::ops
