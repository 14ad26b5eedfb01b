// Exact integer products on float32 kernels (NOTE [Exact integer products in float32]): ONNX's
// integer ops (MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv, DynamicQuantizeLSTM) define
// exact sums of 8-bit products. A float32 product is exact when every partial sum is a whole
// number below 2^24, whatever the order the kernel adds in; so K is cut into runs short enough for
// that bound, each run is one float32 product, and the runs are added in float64.
#include <cmath>

#include "lite/onnx_mapper.h"

namespace spore::onnx::detail {
namespace {

constexpr double kExactFloat32 = 16777215.0;  // 2^24 - 1: every whole number up to it is a float32

// How many terms of at most `bound` each a float32 sum holds exactly.
int64_t exact_run(double bound) { return std::max<int64_t>(1, (int64_t)std::floor(kExactFloat32 / std::max(bound, 1.0))); }

uint32_t slice(NodeCtx& c, uint32_t x, int axis, int64_t from, int64_t to) {
  return c.m.emit(c, OpId::k_slice, {x}, Attrs::of((int64_t)axis, from, to, int64_t{1}));
}

}  // namespace

double centered_bound(NodeCtx& c, DType t, uint32_t zp) {
  double lo, hi;
  switch (t) {
    case DType::kUInt8: lo = 0, hi = 255; break;
    case DType::kInt8: lo = -128, hi = 127; break;
    default: return INFINITY;  // not an 8-bit integer: no run is known to be exact
  }
  if (zp == kNone) return std::max(-lo, hi);
  if (!c.m.is_constant(zp)) return hi - lo;  // a zero point the run computes: anywhere in the range
  double bound = 0;
  for (double z : c.m.float_data(c, zp, "zero point")) bound = std::max({bound, std::fabs(lo - z), std::fabs(hi - z)});
  return bound;
}

uint32_t exact_integer_matmul(NodeCtx& c, uint32_t a, uint32_t w, double bound) {
  Mapper& m = c.m;
  const Shape as = m.shape(a), ws = m.shape(w);
  if (as.ndim() < 1 || ws.ndim() < 1) c.bad("integer products need operands of rank 1 or more");
  const int a_axis = as.ndim() - 1, w_axis = ws.ndim() == 1 ? 0 : ws.ndim() - 2;
  const int64_t k = as[a_axis], run = exact_run(bound);
  if (!std::isfinite(bound)) return m.emit(c, OpId::k_matmul, {m.cast_to(c, a, DType::kFloat64), m.cast_to(c, w, DType::kFloat64)});
  const uint32_t a32 = m.cast_to(c, a, DType::kFloat32), w32 = m.cast_to(c, w, DType::kFloat32);
  if (k <= run) return m.emit(c, OpId::k_matmul, {a32, w32});  // exact in float32 already
  uint32_t sum = kNone;
  for (int64_t k0 = 0; k0 < k; k0 += run) {
    const int64_t k1 = std::min(k, k0 + run);
    const uint32_t part = m.cast_to(c, m.emit(c, OpId::k_matmul, {slice(c, a32, a_axis, k0, k1), slice(c, w32, w_axis, k0, k1)}), DType::kFloat64);
    sum = sum == kNone ? part : m.emit(c, OpId::k_add, {sum, part});
  }
  return sum;
}

uint32_t exact_integer_conv(NodeCtx& c, const Handler& conv, uint32_t x, uint32_t w, double bound) {
  Mapper& m = c.m;
  const Shape ws = m.shape(w);
  if (ws.ndim() < 3) c.bad("W must have an output channel, an input channel and spatial axes");
  int64_t taps = 1;
  for (int d = 2; d < ws.ndim(); ++d) taps *= ws[d];
  const int64_t cin = ws[1], run = exact_run(bound);
  auto run_conv = [&](uint32_t xs, uint32_t wt, DType t) {
    NodeCtx inner{c.m, c.node, {m.cast_to(c, xs, t), m.cast_to(c, wt, t)}, c.where};
    return conv(inner)[0];
  };
  if (!std::isfinite(bound) || taps > run || (cin * taps > run && c.i("group", 1) != 1)) return run_conv(x, w, DType::kFloat64);
  if (cin * taps <= run) return run_conv(x, w, DType::kFloat32);  // exact in float32 already
  // One group: the input channels in runs of run / taps, each a float32 convolution.
  const int64_t per = run / taps;
  uint32_t sum = kNone;
  for (int64_t c0 = 0; c0 < cin; c0 += per) {
    const int64_t c1 = std::min(cin, c0 + per);
    const uint32_t part = m.cast_to(c, run_conv(slice(c, x, 1, c0, c1), slice(c, w, 1, c0, c1), DType::kFloat32), DType::kFloat64);
    sum = sum == kNone ? part : m.emit(c, OpId::k_add, {sum, part});
  }
  return sum;
}

}  // namespace spore::onnx::detail
