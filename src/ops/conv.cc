// Convolution and pooling ops (NCHW): conv2d and its two gradients, max/avg pooling and their
// gradients, adaptive average pooling and its gradient. Attributes: NOTE [Conv and pool
// attributes] in conv_geometry.h.
//
// NOTE [Pooling semantics]
// PyTorch's: output extents follow pooling_output_shape (ceil_mode rounds up, but a window must
// start inside the input or its left padding); padding is at most half the kernel. Max pooling
// pads with -inf and picks the FIRST maximum of a window in row-major order (a NaN counts as the
// maximum, the first NaN wins); max_pool2d_grad routes each gradient to that same element.
// Average pooling divides by the number of real (unpadded) cells of a window
// (count_include_pad = false). Adaptive windows: [floor(i*H/Ho), ceil((i+1)*H/Ho)).
//
// The gradient ops are ordinary ops (the backward rules below are written with them); they need
// no backward rule of their own for first-order gradients.
#include <string>

#include "describe.h"
#include "conv_geometry.h"
#include "fused_program.h"
#include "op_families.h"
#include "spore/ops.h"

namespace spore::ops {

namespace {

// Largest stride, padding, dilation, kernel or output size accepted: far beyond any real use,
// and it keeps every extent computation inside int64.
constexpr int64_t kMaxPairValue = int64_t{1} << 30;
// Largest extent accepted in an input_shape/weight_shape attribute.
constexpr int64_t kMaxShapeValue = int64_t{1} << 40;


std::string hw(int64_t h, int64_t w) {
  return std::to_string(h) + "x" + std::to_string(w);
}

// A (height, width) attribute: 1 or 2 values, each in [lo, kMaxPairValue].
void check_pair(const OpDef& def, const char* name, const std::vector<int64_t>& v, int64_t lo) {
  if (v.size() != 1 && v.size() != 2)
    op_error(def, ErrorCode::kValue,
             std::string(name) + " " + ints_str(v) +
                 " must hold 2 values (height, width) or 1 for both");
  for (int64_t x : v)
    if (x < lo || x > kMaxPairValue)
      op_error(def, ErrorCode::kValue,
               std::string(name) + " " + ints_str(v) + " must have values in [" +
                   std::to_string(lo) + ", " + std::to_string(kMaxPairValue) + "]");
}

void check_4d(const OpDef& def, const char* role, const Tensor& t, const char* layout) {
  if (t.ndim() != 4)
    op_error(def, ErrorCode::kShape,
             std::string(role) + " " + describe(t) + " must be 4-D " + layout);
}

// An input_shape/weight_shape attribute: 4 non-negative extents.
Shape shape_attr(const OpDef& def, const char* name, const std::vector<int64_t>& v) {
  if (v.size() != 4)
    op_error(def, ErrorCode::kValue, std::string(name) + " " + ints_str(v) + " must hold 4 values");
  for (int64_t x : v)
    if (x < 0 || x > kMaxShapeValue)
      op_error(def, ErrorCode::kValue,
               std::string(name) + " " + ints_str(v) + " must have values in [0, " +
                   std::to_string(kMaxShapeValue) + "]");
  return Shape(v);
}

DType floating_compute(const OpDef& def, const Tensor& a, const Tensor& b) {
  const DType t = promote_types(a.dtype(), b.dtype());
  if (!is_floating(t))
    op_error(def, ErrorCode::kDType,
             "needs floating inputs, got " + describe(a) + " and " + describe(b) +
                 "; cast them first, e.g. cast(x, DType::kFloat32)");
  return t;
}

void require_floating(const OpDef& def, const Tensor& x) {
  if (!is_floating(x.dtype()))
    op_error(def, ErrorCode::kDType,
             "needs a floating input, got " + describe(x) +
                 "; cast it first, e.g. cast(x, DType::kFloat32)");
}

// ---- convolution ----------------------------------------------------------------------------

// Validates a convolution of an input of shape `x` with a weight of shape `w` (conv attributes
// from index `first`) and returns its geometry. `xd`/`wd` describe the two for messages.
ConvGeometry check_conv(const OpDef& def, const Shape& x, const Shape& w, const Attrs& a, int first,
                        const std::string& xd, const std::string& wd) {
  check_pair(def, "stride", a.ints(first), 1);
  check_pair(def, "padding", a.ints(first + 1), 0);
  check_pair(def, "dilation", a.ints(first + 2), 1);
  const int64_t groups = a.i(first + 3);
  if (groups < 1)
    op_error(def, ErrorCode::kValue, "groups must be >= 1, got " + std::to_string(groups));
  if (x[1] % groups != 0)
    op_error(def, ErrorCode::kShape,
             "the " + std::to_string(x[1]) + " input channels of " + xd +
                 " are not divisible by groups = " + std::to_string(groups));
  if (w[0] % groups != 0)
    op_error(def, ErrorCode::kShape,
             "the " + std::to_string(w[0]) + " output channels of weight " + wd +
                 " are not divisible by groups = " + std::to_string(groups));
  if (w[1] != x[1] / groups)
    op_error(def, ErrorCode::kShape,
             "weight " + wd + " has " + std::to_string(w[1]) + " input channels per group, but " +
                 xd + " with groups = " + std::to_string(groups) + " needs " +
                 std::to_string(x[1] / groups) +
                 "; the weight must be [out_channels, in_channels / groups, kh, kw]");
  if (w[2] < 1 || w[3] < 1)
    op_error(def, ErrorCode::kShape,
             "weight " + wd + " has an empty kernel; kh and kw must be >= 1");
  ConvGeometry g;
  const auto &st = a.ints(first), &pd = a.ints(first + 1), &dl = a.ints(first + 2);
  for (int i = 0; i < 2; ++i) {
    const int64_t in = x[2 + i], k = w[2 + i], p = pair_at(pd, i), d = pair_at(dl, i);
    // 128-bit: k comes from a tensor's shape, which an expanded view can make huge.
    const __int128 ext = (__int128)d * (k - 1) + 1;
    if (ext > (__int128)in + 2 * p)
      op_error(def, ErrorCode::kShape,
               "the kernel " + hw(w[2], w[3]) + " of weight " + wd + " with dilation " +
                   ints_str(dl) + " is larger than the padded input " +
                   hw(x[2] + 2 * pair_at(pd, 0), x[3] + 2 * pair_at(pd, 1)) + " (" + xd +
                   " with padding " + ints_str(pd) + ")");
  }
  g.n = x[0], g.c = x[1], g.h = x[2], g.w = x[3], g.o = w[0], g.kh = w[2], g.kw = w[3],
  g.groups = groups;
  g.sh = pair_at(st, 0), g.sw = pair_at(st, 1), g.ph = pair_at(pd, 0), g.pw = pair_at(pd, 1);
  g.dh = pair_at(dl, 0), g.dw = pair_at(dl, 1);
  g.ho = conv_out_extent(g.h, g.kh, g.sh, g.ph, g.dh);
  g.wo = conv_out_extent(g.w, g.kw, g.sw, g.pw, g.dw);
  return g;
}

void check_grad_out(const OpDef& def, const Tensor& gy, const Shape& want, const std::string& of) {
  check_4d(def, "grad_out", gy, "[N, C, H, W]");
  if (gy.shape() != want)
    op_error(def, ErrorCode::kShape,
             "grad_out " + describe(gy) + " does not match the shape " + want.str() +
                 " of the forward output for " + of);
}

void infer_conv2d(const InferArgs& a, Inference& out) {
  const Tensor &x = a.inputs[0], &w = a.inputs[1];
  check_4d(a.def, "input", x, "[N, C, H, W]");
  check_4d(a.def, "weight", w, "[out_channels, in_channels / groups, kh, kw]");
  const DType t = floating_compute(a.def, x, w);
  ConvGeometry g =
      check_conv(a.def, x.shape(), w.shape(), a.attrs, 0, "input " + describe(x), describe(w));
  out.outputs[0] = {Shape{g.n, g.o, g.ho, g.wo}, t};
  out.compute = t;
}

void infer_conv2d_grad_input(const InferArgs& a, Inference& out) {
  const Tensor &gy = a.inputs[0], &w = a.inputs[1];
  const Shape xs = shape_attr(a.def, "input_shape", a.attrs.ints(0));
  check_4d(a.def, "weight", w, "[out_channels, in_channels / groups, kh, kw]");
  const DType t = floating_compute(a.def, gy, w);
  const std::string xd = "input_shape " + xs.str();
  ConvGeometry g = check_conv(a.def, xs, w.shape(), a.attrs, 1, xd, describe(w));
  check_grad_out(a.def, gy, Shape{g.n, g.o, g.ho, g.wo}, xd + " and weight " + describe(w));
  out.outputs[0] = {xs, t};
  out.compute = t;
}

void infer_conv2d_grad_weight(const InferArgs& a, Inference& out) {
  const Tensor &gy = a.inputs[0], &x = a.inputs[1];
  const Shape ws = shape_attr(a.def, "weight_shape", a.attrs.ints(0));
  check_4d(a.def, "input", x, "[N, C, H, W]");
  const DType t = floating_compute(a.def, gy, x);
  const std::string wd = "weight_shape " + ws.str();
  ConvGeometry g = check_conv(a.def, x.shape(), ws, a.attrs, 1, "input " + describe(x), wd);
  check_grad_out(a.def, gy, Shape{g.n, g.o, g.ho, g.wo}, "input " + describe(x) + " and " + wd);
  out.outputs[0] = {ws, t};
  out.compute = t;
}

// fused_conv2d(x, weight, bias, scalars...): conv2d's checks, then bias [out_channels] and the
// clamp bounds (NOTE [Lite executor]: Lite substitutes it at load for a convolution, its folded
// BatchNorm and its ReLU / ReLU6 / Clip), then the optional epilogue (NOTE [Convolution
// epilogues]): a fused program over the clamped float32 output (%0) and the one-element inputs
// after the bias (%1...), whose result is the node's output.
void infer_fused_conv2d(const InferArgs& a, Inference& out) {
  if (a.inputs.size() < 3)
    op_error(a.def, ErrorCode::kValue, "takes x, weight and bias, got " + std::to_string(a.inputs.size()) + " inputs");
  infer_conv2d(a, out);
  const Tensor& b = a.inputs[2];
  const int64_t o = a.inputs[1].shape()[0];
  if (b.ndim() != 1 || b.shape()[0] != o)
    op_error(a.def, ErrorCode::kShape,
             "bias " + describe(b) + " must be 1-D with the weight's " + std::to_string(o) + " output channels");
  if (!is_floating(b.dtype())) op_error(a.def, ErrorCode::kDType, "needs a floating bias, got " + describe(b));
  out.compute = out.outputs[0].dtype = promote_types(out.compute, b.dtype());
  const double lo = a.attrs.f(4), hi = a.attrs.f(5);
  if (!(lo <= hi))
    op_error(a.def, ErrorCode::kValue,
             "clamp bounds [" + std::to_string(lo) + ", " + std::to_string(hi) +
                 "] are empty or NaN; use -inf and inf for no clamp");
  const std::string epilogue = a.attrs.size() > 6 ? a.attrs.s(6) : std::string();  // optional
  if (epilogue.empty()) {
    if (a.inputs.size() > 3) op_error(a.def, ErrorCode::kValue, "inputs after the bias need an epilogue that reads them");
    return;
  }
  if (out.outputs[0].dtype != DType::kFloat32)
    op_error(a.def, ErrorCode::kDType, "an epilogue needs a float32 convolution, got " + std::string(dtype_name(out.outputs[0].dtype)));
  std::vector<DType> dtypes{DType::kFloat32};
  for (size_t k = 3; k < a.inputs.size(); ++k) {
    if (a.inputs[k].numel() != 1)
      op_error(a.def, ErrorCode::kShape, "epilogue input " + std::to_string(k - 2) + " " + describe(a.inputs[k]) + " must hold one element");
    dtypes.push_back(a.inputs[k].dtype());
  }
  FusedProgram p = parse_fused_program(epilogue);
  type_fused_program(p, dtypes);
  if (p.num_inputs != (int)dtypes.size())
    op_error(a.def, ErrorCode::kValue, "the epilogue reads " + std::to_string(p.num_inputs) + " values but the node gives it " +
                                           std::to_string(dtypes.size()) + "; every one must be read");
  if (p.instrs.back().result != DType::kFloat32)
    op_error(a.def, ErrorCode::kDType, std::string("the epilogue must end in float32, its result is ") + dtype_name(p.instrs.back().result));
}

Conv2dOptions conv_options(const Attrs& a, int first) {
  Conv2dOptions o;
  o.stride = a.ints(first);
  o.padding = a.ints(first + 1);
  o.dilation = a.ints(first + 2);
  o.groups = a.i(first + 3);
  return o;
}

std::vector<Tensor> conv2d_backward(const BackwardArgs& b) {
  const Tensor &x = b.inputs[0], &w = b.inputs[1], &gy = b.grad_outputs[0];
  const Conv2dOptions o = conv_options(b.attrs, 0);
  return {b.needs(0) ? conv2d_grad_input(gy, w, x.shape().to_vector(), o) : Tensor(),
          b.needs(1) ? conv2d_grad_weight(gy, x, w.shape().to_vector(), o) : Tensor()};
}

// ---- pooling --------------------------------------------------------------------------------

PoolGeometry check_pool(const OpDef& def, const Tensor& x, const Attrs& a) {
  check_4d(def, "input", x, "[N, C, H, W]");
  if (x.shape()[2] < 1 || x.shape()[3] < 1)
    op_error(def, ErrorCode::kShape,
             "input " + describe(x) + " has an empty spatial axis; H and W must be >= 1");
  const auto &k = a.ints(0), &st = a.ints(1), &pd = a.ints(2);
  check_pair(def, "kernel", k, 1);
  if (!st.empty()) check_pair(def, "stride", st, 1);
  check_pair(def, "padding", pd, 0);
  for (int i = 0; i < 2; ++i)
    if (2 * pair_at(pd, i) > pair_at(k, i))
      op_error(def, ErrorCode::kValue,
               "padding " + ints_str(pd) + " must be at most half of the kernel " + ints_str(k));
  PoolGeometry g = pool_geometry(x.shape(), a);
  if (g.ho < 1 || g.wo < 1)
    op_error(def, ErrorCode::kShape,
             "the kernel " + hw(g.kh, g.kw) + " is larger than the padded input " +
                 hw(g.h + 2 * g.ph, g.w + 2 * g.pw) + " (input " + describe(x) + " with padding " +
                 ints_str(pd) + ")");
  return g;
}

void infer_pool(const InferArgs& a, Inference& out) {
  const Tensor& x = a.inputs[0];
  check_4d(a.def, "input", x, "[N, C, H, W]");
  require_floating(a.def, x);
  PoolGeometry g = check_pool(a.def, x, a.attrs);
  out.outputs[0] = {Shape{g.n, g.c, g.ho, g.wo}, x.dtype()};
  out.compute = x.dtype();
}

void infer_pool_grad(const InferArgs& a, Inference& out) {
  const Tensor &gy = a.inputs[0], &x = a.inputs[1];
  const DType t = floating_compute(a.def, gy, x);
  PoolGeometry g = check_pool(a.def, x, a.attrs);
  check_grad_out(a.def, gy, Shape{g.n, g.c, g.ho, g.wo}, "input " + describe(x));
  out.outputs[0] = {x.shape(), t};
  out.compute = t;
}

Pool2dOptions pool_options(const Attrs& a) {
  Pool2dOptions o;
  o.kernel = a.ints(0);
  o.stride = a.ints(1);
  o.padding = a.ints(2);
  o.ceil_mode = a.b(3);
  return o;
}

std::vector<Tensor> max_pool2d_backward(const BackwardArgs& b) {
  return {max_pool2d_grad(b.grad_outputs[0], b.inputs[0], pool_options(b.attrs))};
}

std::vector<Tensor> avg_pool2d_backward(const BackwardArgs& b) {
  return {avg_pool2d_grad(b.grad_outputs[0], b.inputs[0], pool_options(b.attrs))};
}

// ---- adaptive average pooling ---------------------------------------------------------------

void check_adaptive_input(const OpDef& def, const Tensor& x) {
  check_4d(def, "input", x, "[N, C, H, W]");
  if (x.shape()[2] < 1 || x.shape()[3] < 1)
    op_error(def, ErrorCode::kShape,
             "input " + describe(x) + " has an empty spatial axis; H and W must be >= 1");
}

void infer_adaptive(const InferArgs& a, Inference& out) {
  const Tensor& x = a.inputs[0];
  check_adaptive_input(a.def, x);
  require_floating(a.def, x);
  const auto& os = a.attrs.ints(0);
  check_pair(a.def, "output_size", os, 1);
  out.outputs[0] = {Shape{x.shape()[0], x.shape()[1], pair_at(os, 0), pair_at(os, 1)}, x.dtype()};
  out.compute = x.dtype();
}

void infer_adaptive_grad(const InferArgs& a, Inference& out) {
  const Tensor &gy = a.inputs[0], &x = a.inputs[1];
  check_adaptive_input(a.def, x);
  check_4d(a.def, "grad_out", gy, "[N, C, Ho, Wo]");
  const DType t = floating_compute(a.def, gy, x);
  const Shape &gs = gy.shape(), &xs = x.shape();
  if (gs[0] != xs[0] || gs[1] != xs[1] || gs[2] < 1 || gs[3] < 1 || gs[2] > kMaxPairValue ||
      gs[3] > kMaxPairValue)
    op_error(a.def, ErrorCode::kShape,
             "grad_out " + describe(gy) + " must be [N, C, Ho, Wo] with N, C of input " +
                 describe(x) + " and Ho, Wo >= 1");
  out.outputs[0] = {xs, t};
  out.compute = t;
}

std::vector<Tensor> adaptive_backward(const BackwardArgs& b) {
  return {adaptive_avg_pool2d_grad(b.grad_outputs[0], b.inputs[0])};
}

}  // namespace

void define_conv_ops(OpTable& table) {
  const AttrSpec stride{"stride", AttrKind::kInts}, padding{"padding", AttrKind::kInts},
      dilation{"dilation", AttrKind::kInts}, groups{"groups", AttrKind::kInt};

  OpDef& conv = define(table, OpId::k_conv2d, 2, {stride, padding, dilation, groups});
  conv.facts = not_elementwise();
  conv.promote_mask = 0b11;
  conv.infer = &infer_conv2d;
  conv.backward = &conv2d_backward;

  // Inference only: Lite substitutes it at load (NOTE [Lite executor]); its gradient would be
  // the clamp's mask times conv2d's, which no training path needs yet.
  OpDef& fc = define(table, OpId::k_fused_conv2d, -1,
                     {stride, padding, dilation, groups, {"clamp_min", AttrKind::kFloat}, {"clamp_max", AttrKind::kFloat},
                      {"epilogue", AttrKind::kString, true}});
  fc.facts = not_elementwise();
  fc.promote_mask = 0b111;
  fc.infer = &infer_fused_conv2d;
  fc.differentiable = false;

  OpDef& gi = define(table, OpId::k_conv2d_grad_input, 2,
                     {{"input_shape", AttrKind::kInts}, stride, padding, dilation, groups});
  gi.facts = not_elementwise();
  gi.promote_mask = 0b11;
  gi.infer = &infer_conv2d_grad_input;
  // The *_grad ops are backward passes; their own gradients (second order through convolution
  // and pooling) are not written yet, which the declaration says instead of a missing rule.
  gi.differentiable = false;

  OpDef& gw = define(table, OpId::k_conv2d_grad_weight, 2,
                     {{"weight_shape", AttrKind::kInts}, stride, padding, dilation, groups});
  gw.facts = not_elementwise();
  gw.promote_mask = 0b11;
  gw.infer = &infer_conv2d_grad_weight;
  gw.differentiable = false;

  const std::vector<AttrSpec> pool_attrs{
      {"kernel", AttrKind::kInts}, stride, padding, {"ceil_mode", AttrKind::kBool}};
  for (OpId id : {OpId::k_max_pool2d, OpId::k_avg_pool2d}) {
    OpDef& d = define(table, id, 1, pool_attrs);
    d.facts = not_elementwise();
    d.promote_mask = 0b1;
    d.infer = &infer_pool;
    d.backward = id == OpId::k_max_pool2d ? &max_pool2d_backward : &avg_pool2d_backward;
  }
  for (OpId id : {OpId::k_max_pool2d_grad, OpId::k_avg_pool2d_grad}) {
    OpDef& d = define(table, id, 2, pool_attrs);
    d.facts = not_elementwise();
    d.promote_mask = 0b11;
    d.infer = &infer_pool_grad;
    d.differentiable = false;
  }

  OpDef& ad = define(table, OpId::k_adaptive_avg_pool2d, 1, {{"output_size", AttrKind::kInts}});
  ad.facts = not_elementwise();
  ad.promote_mask = 0b1;
  ad.infer = &infer_adaptive;
  ad.backward = &adaptive_backward;

  OpDef& adg = define(table, OpId::k_adaptive_avg_pool2d_grad, 2);
  adg.facts = not_elementwise();
  adg.promote_mask = 0b11;
  adg.infer = &infer_adaptive_grad;
  adg.differentiable = false;
}

}  // namespace spore::ops
