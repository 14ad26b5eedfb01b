// Shape ops: reshape, permute, slice, expand (views, NOTE [Views]), concat and slice_scatter
// (kernels), and their backward rules.
//
// View ops have no kernel: their view function builds the output with Tensor::view_of over the
// input's storage, so no element moves and writes through either tensor are seen by both.
//
// NOTE [Shape gradients]
// Each rule undoes its op on the gradient with other shape ops: reshape and permute map the
// gradient back (reshape to the input's shape, the inverse permutation); slice writes it into
// zeros of the input's shape (slice_scatter) and concat slices it back per input; expand sums
// it over the broadcast axes. View ops are dispatched like any op, so the tape records them
// (dispatch calls the observer for views too), and the composites of shape_api.cc (squeeze,
// transpose, split, stack...) differentiate through the registry ops they are made of.
#include <algorithm>
#include <cstdint>
#include <string>

#include "describe.h"
#include "op_families.h"
#include "shape_rules.h"
#include "spore/ops.h"

namespace spore::ops {

namespace {

// ---- reshape --------------------------------------------------------------------------------
// NOTE [Reshape views]
// reshape returns a view whenever the requested shape can be expressed with strides over the
// input's memory (view_strides below): always for contiguous inputs, and also for strided
// inputs whose merged dims are contiguous with each other (a slice of rows, a transposed tensor
// reshaped only in its untouched dims, an expanded tensor that only gains size-1 dims...).
// Otherwise the elements must move: reshape's view function then makes a contiguous copy
// (x.contiguous(), the copy op) and returns a view of that copy. The result never shares
// storage with the input in that case, so callers that need aliasing check same_storage().
void infer_reshape(const InferArgs& a, Inference& out) {
  const Tensor& x = a.inputs[0];
  Shape s = resolve_reshape(a.def, x.shape(), a.attrs.ints(0));
  out.outputs[0] = {s, x.dtype()};
  out.compute = x.dtype();
}

void view_reshape(std::span<const Tensor> in, const Attrs& attrs, std::span<Tensor> out) {
  const Tensor& x = in[0];
  Shape s = resolve_reshape(op_def(OpId::k_reshape), x.shape(), attrs.ints(0));
  Shape strides;
  if (view_strides(x.shape(), x.strides(), s, strides)) {
    out[0] = Tensor::view_of(x.storage(), x.offset(), s, strides, x.dtype());
    return;
  }
  Tensor c = x.contiguous();
  out[0] = Tensor::view_of(c.storage(), c.offset(), s, contiguous_strides(s), c.dtype());
}

// ---- permute --------------------------------------------------------------------------------
std::vector<int> permute_axes(const OpDef& def, const Tensor& x, const std::vector<int64_t>& axes) {
  const int n = x.ndim();
  if ((int)axes.size() != n)
    op_error(def, ErrorCode::kShape, "axes " + ints_str(axes) + " must list each of the " +
                                         std::to_string(n) + " axes of input " +
                                         describe_inputs({&x, 1}) + " exactly once");
  std::vector<int> p(n);
  std::vector<bool> seen(n, false);
  for (int i = 0; i < n; ++i) {
    p[i] = normalize_axis(axes[i], n, def.name);
    if (seen[p[i]])
      op_error(def, ErrorCode::kValue, "axes " + ints_str(axes) + " repeat axis " +
                                           std::to_string(p[i]) + "; give a permutation of 0.." +
                                           std::to_string(n - 1));
    seen[p[i]] = true;
  }
  return p;
}

void infer_permute(const InferArgs& a, Inference& out) {
  const Tensor& x = a.inputs[0];
  std::vector<int> p = permute_axes(a.def, x, a.attrs.ints(0));
  Shape s;
  for (int ax : p) s.push_back(x.shape()[ax]);
  out.outputs[0] = {s, x.dtype()};
  out.compute = x.dtype();
}

void view_permute(std::span<const Tensor> in, const Attrs& attrs, std::span<Tensor> out) {
  const Tensor& x = in[0];
  std::vector<int> p = permute_axes(op_def(OpId::k_permute), x, attrs.ints(0));
  Shape s, st;
  for (int ax : p) {
    s.push_back(x.shape()[ax]);
    st.push_back(x.strides()[ax]);
  }
  out[0] = Tensor::view_of(x.storage(), x.offset(), s, st, x.dtype());
}

// ---- slice ----------------------------------------------------------------------------------
void infer_slice(const InferArgs& a, Inference& out) {
  const Tensor& x = a.inputs[0];
  SliceRange r = resolve_slice(a.def, x.shape(), a.attrs.i(0), a.attrs.i(1), a.attrs.i(2), a.attrs.i(3));
  Shape s = x.shape();
  s[r.axis] = r.length;
  out.outputs[0] = {s, x.dtype()};
  out.compute = x.dtype();
}

void view_slice(std::span<const Tensor> in, const Attrs& attrs, std::span<Tensor> out) {
  const Tensor& x = in[0];
  SliceRange r = resolve_slice(op_def(OpId::k_slice), x.shape(), attrs.i(0), attrs.i(1), attrs.i(2),
                               attrs.i(3));
  Shape s = x.shape(), st = x.strides();
  s[r.axis] = r.length;
  // An empty slice keeps the input's offset: view_of does not bound-check empty views, and no
  // element of it is ever addressed.
  int64_t offset = x.offset() + (r.length > 0 ? r.start * st[r.axis] : 0);
  // With one element or none the stride is never used; skipping it avoids overflowing
  // stride * step for a huge step (with two or more elements the product stays inside the input).
  if (r.length > 1) st[r.axis] *= r.step;
  out[0] = Tensor::view_of(x.storage(), offset, s, st, x.dtype());
}

// ---- expand ---------------------------------------------------------------------------------
void infer_expand(const InferArgs& a, Inference& out) {
  const Tensor& x = a.inputs[0];
  Shape strides;
  Shape s = resolve_expand(a.def, x.shape(), x.strides(), a.attrs.ints(0), strides);
  out.outputs[0] = {s, x.dtype()};
  out.compute = x.dtype();
}

void view_expand(std::span<const Tensor> in, const Attrs& attrs, std::span<Tensor> out) {
  const Tensor& x = in[0];
  Shape strides;
  Shape s = resolve_expand(op_def(OpId::k_expand), x.shape(), x.strides(), attrs.ints(0), strides);
  out[0] = Tensor::view_of(x.storage(), x.offset(), s, strides, x.dtype());
}

// ---- concat ---------------------------------------------------------------------------------
// Inputs join type promotion (all bits of promote_mask), so the kernel sees one dtype and only
// copies blocks. Shapes must agree except along the axis.
void infer_concat(const InferArgs& a, Inference& out) {
  const Tensor& x0 = a.inputs[0];
  if (x0.ndim() == 0)
    op_error(a.def, ErrorCode::kShape, "cannot concatenate 0-d tensors (inputs " +
                                           describe_inputs(a.inputs) + "); use stack, or unsqueeze them first");
  const int axis = normalize_axis(a.attrs.i(0), x0.ndim(), a.def.name);
  Shape s = x0.shape();
  DType t = x0.dtype();
  int64_t total = 0;
  for (size_t k = 0; k < a.inputs.size(); ++k) {
    const Tensor& x = a.inputs[k];
    bool ok = x.ndim() == x0.ndim();
    for (int d = 0; ok && d < x.ndim(); ++d) ok = d == axis || x.shape()[d] == s[d];
    if (!ok)
      op_error(a.def, ErrorCode::kShape,
               "input " + std::to_string(k) + " has shape " + x.shape().str() +
                   " but input 0 has " + s.str() + "; all shapes must match except along axis " +
                   std::to_string(axis) + " (inputs " + describe_inputs(a.inputs) + ")");
    total += x.shape()[axis];
    if (k) t = promote_types(t, x.dtype());
  }
  s[axis] = total;
  out.outputs[0] = {s, t};
  out.compute = t;
}

// ---- slice_scatter --------------------------------------------------------------------------
// slice_scatter(x, src; axis, start, end, step): x with the slice that slice() would view
// replaced by src, which must have exactly that slice's shape and x's dtype.
void infer_slice_scatter(const InferArgs& a, Inference& out) {
  const Tensor& x = a.inputs[0];
  const Tensor& src = a.inputs[1];
  SliceRange r = resolve_slice(a.def, x.shape(), a.attrs.i(0), a.attrs.i(1), a.attrs.i(2), a.attrs.i(3));
  Shape s = x.shape();
  s[r.axis] = r.length;
  if (src.shape() != s)
    op_error(a.def, ErrorCode::kShape,
             "src has shape " + src.shape().str() + " but the slice " + std::to_string(r.start) + ":" +
                 std::to_string(r.start + r.length * r.step) + ":" + std::to_string(r.step) + " of axis " +
                 std::to_string(r.axis) + " of x " + x.shape().str() + " has shape " + s.str() +
                 "; src must have the slice's shape");
  if (src.dtype() != x.dtype())
    op_error(a.def, ErrorCode::kDType, "src is " + std::string(dtype_name(src.dtype())) + " but x is " +
                                           dtype_name(x.dtype()) + " (inputs " + describe_inputs(a.inputs) +
                                           "); cast src to x's dtype");
  out.outputs[0] = {x.shape(), x.dtype()};
  out.compute = x.dtype();
}

// ---- backward rules (NOTE [Shape gradients]) ------------------------------------------------
Tensor zeros_for(const Shape& shape, const Tensor& like) {
  return full(shape.to_vector(), 0.0, like.dtype(), like.device());
}

std::vector<Tensor> reshape_backward(const BackwardArgs& b) {
  return {reshape(b.grad_outputs[0], b.inputs[0].shape().to_vector())};
}

std::vector<Tensor> permute_backward(const BackwardArgs& b) {
  std::vector<int> p = permute_axes(op_def(OpId::k_permute), b.inputs[0], b.attrs.ints(0));
  std::vector<int64_t> inverse(p.size());
  for (size_t i = 0; i < p.size(); ++i) inverse[(size_t)p[i]] = (int64_t)i;
  return {permute(b.grad_outputs[0], inverse)};
}

std::vector<Tensor> slice_backward(const BackwardArgs& b) {
  const Tensor &x = b.inputs[0], &g = b.grad_outputs[0];
  const Attrs& a = b.attrs;
  return {slice_scatter(zeros_for(x.shape(), g), g, a.i(0), a.i(1), a.i(2), a.i(3))};
}

// The gradient summed over the axes expand broadcast (sum_to).
std::vector<Tensor> expand_backward(const BackwardArgs& b) {
  return {sum_to(b.grad_outputs[0], b.inputs[0].shape())};
}

std::vector<Tensor> concat_backward(const BackwardArgs& b) {
  const Tensor& g = b.grad_outputs[0];
  const int axis = normalize_axis(b.attrs.i(0), g.ndim(), "concat");
  std::vector<Tensor> grads;
  int64_t at = 0;
  for (const Tensor& x : b.inputs) {
    const int64_t n = x.shape()[axis];
    grads.push_back(slice(g, axis, at, at + n));
    at += n;
  }
  return grads;
}

// x keeps the gradient outside the slice (inside, its values were overwritten); src gets the slice.
std::vector<Tensor> slice_scatter_backward(const BackwardArgs& b) {
  const Tensor &src = b.inputs[1], &g = b.grad_outputs[0];
  const Attrs& a = b.attrs;
  return {slice_scatter(g, zeros_for(src.shape(), g), a.i(0), a.i(1), a.i(2), a.i(3)),
          slice(g, a.i(0), a.i(1), a.i(2), a.i(3))};
}

}  // namespace

void define_shape_ops(OpTable& table) {
  OpDef& reshape = define(table, OpId::k_reshape, 1, {{"shape", AttrKind::kInts}});
  reshape.facts = not_elementwise();
  reshape.infer = infer_reshape;
  reshape.view = view_reshape;
  reshape.backward = reshape_backward;

  OpDef& permute = define(table, OpId::k_permute, 1, {{"axes", AttrKind::kInts}});
  permute.facts = not_elementwise();
  permute.infer = infer_permute;
  permute.view = view_permute;
  permute.backward = permute_backward;

  const std::vector<AttrSpec> slice_attrs{
      {"axis", AttrKind::kInt}, {"start", AttrKind::kInt}, {"end", AttrKind::kInt}, {"step", AttrKind::kInt}};
  OpDef& slice = define(table, OpId::k_slice, 1, slice_attrs);
  slice.facts = not_elementwise();
  slice.infer = infer_slice;
  slice.view = view_slice;
  slice.backward = slice_backward;

  OpDef& expand = define(table, OpId::k_expand, 1, {{"shape", AttrKind::kInts}});
  expand.facts = not_elementwise();
  expand.infer = infer_expand;
  expand.view = view_expand;
  expand.backward = expand_backward;

  OpDef& concat = define(table, OpId::k_concat, -1, {{"axis", AttrKind::kInt}});
  concat.facts = not_elementwise();
  concat.promote_mask = ~0u;
  concat.infer = infer_concat;
  concat.backward = concat_backward;

  // x and src join promotion (they share one dtype) so that a precision fallback casts both.
  OpDef& scatter = define(table, OpId::k_slice_scatter, 2, slice_attrs);
  scatter.facts = not_elementwise();
  scatter.promote_mask = 0b11;
  scatter.infer = infer_slice_scatter;
  scatter.backward = slice_scatter_backward;
}

}  // namespace spore::ops
