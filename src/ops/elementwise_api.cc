// The public elementwise functions of include/spore/ops.h: each dispatches one op.
#include <cmath>
#include <limits>

#include "spore/op_registry.h"
#include "spore/ops.h"

namespace spore {

namespace {
// Shared, so that a call builds no attribute list of its own (NOTE [Tensor allocation]).
const Attrs kNoAttrs;

Tensor binary(OpId id, const Tensor& a, const Tensor& b) {
  const Tensor in[2] = {a, b};
  return dispatch1(id, std::span<const Tensor>(in, 2), kNoAttrs);
}
Tensor unary(OpId id, const Tensor& x) {
  return dispatch1(id, std::span<const Tensor>(&x, 1), kNoAttrs);
}

// NOTE [Scalar operands]: a C++ number arrives as a double; it counts as an integer scalar when
// it holds an integral value (so i32 + 2 stays int32, i32 + 2.5 gives float32), following
// NOTE [Type promotion].
Tensor scalar_operand(const Tensor& like, double value) { return scalar_like(like, value); }
}  // namespace

Tensor scalar_like(const Tensor& like, double value) {
  const bool floating = !(std::isfinite(value) && value == std::trunc(value));
  const DType t = promote_with_scalar(like.dtype(), floating);
  return full({}, value, t, like.device());  // one fill op, made in the dtype
}

Tensor add(const Tensor& a, const Tensor& b) { return binary(OpId::k_add, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary(OpId::k_sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(OpId::k_mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(OpId::k_div, a, b); }
Tensor pow(const Tensor& a, const Tensor& b) { return binary(OpId::k_pow, a, b); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary(OpId::k_maximum, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary(OpId::k_minimum, a, b); }
Tensor eq(const Tensor& a, const Tensor& b) { return binary(OpId::k_eq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return binary(OpId::k_ne, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return binary(OpId::k_lt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return binary(OpId::k_le, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return binary(OpId::k_gt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return binary(OpId::k_ge, a, b); }
Tensor logical_and(const Tensor& a, const Tensor& b) { return binary(OpId::k_logical_and, a, b); }
Tensor logical_or(const Tensor& a, const Tensor& b) { return binary(OpId::k_logical_or, a, b); }

Tensor add(const Tensor& a, double b) { return add(a, scalar_operand(a, b)); }
Tensor sub(const Tensor& a, double b) { return sub(a, scalar_operand(a, b)); }
Tensor mul(const Tensor& a, double b) { return mul(a, scalar_operand(a, b)); }
Tensor div(const Tensor& a, double b) { return div(a, scalar_operand(a, b)); }
Tensor pow(const Tensor& a, double b) { return pow(a, scalar_operand(a, b)); }

Tensor neg(const Tensor& x) { return unary(OpId::k_neg, x); }
Tensor abs(const Tensor& x) { return unary(OpId::k_abs, x); }
Tensor exp(const Tensor& x) { return unary(OpId::k_exp, x); }
Tensor log(const Tensor& x) { return unary(OpId::k_log, x); }
Tensor sqrt(const Tensor& x) { return unary(OpId::k_sqrt, x); }
Tensor rsqrt(const Tensor& x) { return unary(OpId::k_rsqrt, x); }
Tensor sin(const Tensor& x) { return unary(OpId::k_sin, x); }
Tensor cos(const Tensor& x) { return unary(OpId::k_cos, x); }
Tensor tanh(const Tensor& x) { return unary(OpId::k_tanh, x); }
Tensor sigmoid(const Tensor& x) { return unary(OpId::k_sigmoid, x); }
Tensor erf(const Tensor& x) { return unary(OpId::k_erf, x); }
Tensor relu(const Tensor& x) { return unary(OpId::k_relu, x); }
Tensor relu6(const Tensor& x) { return unary(OpId::k_relu6, x); }
Tensor round(const Tensor& x) { return unary(OpId::k_round, x); }
Tensor gelu(const Tensor& x, bool tanh_approximation) {
  return unary(tanh_approximation ? OpId::k_gelu_tanh : OpId::k_gelu, x);
}
Tensor silu(const Tensor& x) { return unary(OpId::k_silu, x); }
Tensor logical_not(const Tensor& x) { return unary(OpId::k_logical_not, x); }

Tensor where(const Tensor& cond, const Tensor& x, const Tensor& y) {
  const Tensor in[3] = {cond, x, y};
  return dispatch1(OpId::k_where, std::span<const Tensor>(in, 3), kNoAttrs);
}

// A cast to the tensor's own dtype returns the tensor itself (no copy), like PyTorch's .to().
Tensor cast(const Tensor& x, DType dtype) {
  if (x.defined() && x.dtype() == dtype) return x;
  return dispatch1(OpId::k_cast, std::span<const Tensor>(&x, 1), Attrs{dtype});
}

// Host-side: both operands in float64, broadcast against each other. Positions where both are
// NaN, or both the same infinity, count as equal; NaN against a number gives NaN.
double max_abs_diff(const Tensor& a, const Tensor& b) {
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), "max_abs_diff");
  const std::vector<double> va = a.to_vector<double>();
  const std::vector<double> vb = b.to_vector<double>();
  const int nd = shape.ndim();
  auto strides_for = [&](const Shape& s) {
    Shape st;
    st.resize(nd, 0);
    int64_t acc = 1;
    for (int i = s.ndim() - 1; i >= 0; --i) {
      st[nd - s.ndim() + i] = s[i] == 1 ? 0 : acc;
      acc *= s[i];
    }
    return st;
  };
  const Shape sa = strides_for(a.shape()), sb = strides_for(b.shape());
  double worst = 0;
  const int64_t n = shape.numel();
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t rem = flat, ia = 0, ib = 0;
    for (int d = nd - 1; d >= 0; --d) {
      int64_t i = rem % shape[d];
      rem /= shape[d];
      ia += i * sa[d];
      ib += i * sb[d];
    }
    double x = va[(size_t)ia], y = vb[(size_t)ib];
    if (x == y || (std::isnan(x) && std::isnan(y))) continue;
    double d = std::abs(x - y);
    if (std::isnan(d)) return std::numeric_limits<double>::quiet_NaN();
    worst = std::max(worst, d);
  }
  return worst;
}

}  // namespace spore
