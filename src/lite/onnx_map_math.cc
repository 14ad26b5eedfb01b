// ONNX elementwise and normalisation ops without a registry op of their own, written with registry
// ops (NOTE [ONNX]): Floor, Ceil, Sign, IsNaN, IsInf, Mod, OneHot, Hardmax, EyeLike,
// GroupNormalization, MeanVarianceNormalization, LpNormalization, LRN, and Det (a cofactor
// expansion along the first row, in float64, for matrices up to 6 x 6).
#include <cmath>
#include <functional>

#include "lite/onnx_mapper.h"

namespace spore::onnx::detail {
namespace {

struct Ops {
  NodeCtx& c;
  uint32_t e(OpId op, std::vector<uint32_t> ins, const Attrs& a = {}) { return c.m.emit(c, op, ins, a); }
  uint32_t k(double v, DType t) { return c.m.scalar(v, t); }
  // x rounded toward zero: through int64 where |x| < 2^52 (every float beyond is whole already);
  // NaN and the large values never reach the cast (no out-of-range conversion).
  uint32_t trunc(uint32_t x) {
    const DType t = c.m.dtype(x);
    const uint32_t small = e(OpId::k_lt, {e(OpId::k_abs, {x}), k(4503599627370496.0, t)});
    const uint32_t safe = e(OpId::k_where, {small, x, k(0, t)});
    const uint32_t whole = c.m.cast_to(c, c.m.cast_to(c, safe, DType::kInt64), t);
    return e(OpId::k_where, {small, whole, x});
  }
  uint32_t floor(uint32_t x) {
    const uint32_t t = trunc(x);
    return e(OpId::k_sub, {t, c.m.cast_to(c, e(OpId::k_gt, {t, x}), c.m.dtype(x))});
  }
  uint32_t ceil(uint32_t x) {
    const uint32_t t = trunc(x);
    return e(OpId::k_add, {t, c.m.cast_to(c, e(OpId::k_lt, {t, x}), c.m.dtype(x))});
  }
  // Half to even: the registry's round (ONNX Round maps to it one to one, NOTE [Op facts]). It
  // was a chain of 16 ops through int64 casts, run at every DynamicQuantizeLinear: 9 of
  // ddddocr_int8's 24 ms were such chains.
  uint32_t round(uint32_t x) { return e(OpId::k_round, {x}); }
};

void require_floating(NodeCtx& c, uint32_t x) {
  if (!is_floating(c.m.dtype(x))) c.bad(c.node.op_type() + " takes a floating-point input");
}

std::vector<uint32_t> rounding(NodeCtx& c, int kind) {
  Ops o{c};
  const uint32_t x = c.at(0);
  require_floating(c, x);
  return {kind == 0 ? o.floor(x) : o.ceil(x)};
}

std::vector<uint32_t> sign(NodeCtx& c) {
  Ops o{c};
  const uint32_t x = c.at(0);
  const DType t = c.m.dtype(x);
  const uint32_t pos = c.m.cast_to(c, o.e(OpId::k_gt, {x, o.k(0, t)}), t), neg = c.m.cast_to(c, o.e(OpId::k_lt, {x, o.k(0, t)}), t);
  return {o.e(OpId::k_sub, {pos, neg})};
}

std::vector<uint32_t> is_nan(NodeCtx& c) {
  Ops o{c};
  return {o.e(OpId::k_ne, {c.at(0), c.at(0)})};
}

std::vector<uint32_t> is_inf(NodeCtx& c) {
  Ops o{c};
  const uint32_t x = c.at(0);
  const DType t = c.m.dtype(x);
  const bool pos = c.i("detect_positive", 1) != 0, neg = c.i("detect_negative", 1) != 0;
  const uint32_t p = o.e(OpId::k_eq, {x, o.k(INFINITY, t)}), n = o.e(OpId::k_eq, {x, o.k(-INFINITY, t)});
  if (pos && neg) return {o.e(OpId::k_logical_or, {p, n})};
  if (pos) return {p};
  if (neg) return {n};
  return {o.e(OpId::k_ne, {p, p})};  // all false
}

// Mod: fmod = 0 takes the divisor's sign, x - floor(x / y) * y; fmod = 1 the
// dividend's, x - trunc(x / y) * y. Both in float64 (exact for integers below 2^53); an integer
// division by zero gives 0 (the spec leaves it undefined).
std::vector<uint32_t> mod(NodeCtx& c) {
  Ops o{c};
  const uint32_t x = c.at(0), y = c.at(1);
  const DType t = c.m.dtype(x);
  const bool fmod = c.i("fmod", 0) != 0;
  const uint32_t xd = c.m.cast_to(c, x, DType::kFloat64), yd = c.m.cast_to(c, y, DType::kFloat64);
  const uint32_t q = o.e(OpId::k_div, {xd, yd});
  uint32_t r = o.e(OpId::k_sub, {xd, o.e(OpId::k_mul, {fmod ? o.trunc(q) : o.floor(q), yd})});
  if (!is_floating(t)) r = o.e(OpId::k_where, {o.e(OpId::k_eq, {yd, o.k(0, DType::kFloat64)}), o.k(0, DType::kFloat64), r});
  if (is_floating(t)) {
    // A finite x modulo an infinite y is x (fmod; and Python's mod when the signs agree), else y.
    const uint32_t inf = o.k(INFINITY, DType::kFloat64);
    const uint32_t edge = o.e(OpId::k_logical_and, {o.e(OpId::k_eq, {o.e(OpId::k_abs, {yd}), inf}), o.e(OpId::k_lt, {o.e(OpId::k_abs, {xd}), inf})});
    const uint32_t opposite = o.e(OpId::k_lt, {o.e(OpId::k_mul, {xd, yd}), o.k(0, DType::kFloat64)});
    r = o.e(OpId::k_where, {edge, fmod ? xd : o.e(OpId::k_where, {opposite, yd, xd}), r});
  }
  return {c.m.cast_to(c, r, t)};
}

std::vector<uint32_t> one_hot(NodeCtx& c) {
  Ops o{c};
  const uint32_t index = c.at(0);
  const Tensor& dv = c.m.data(c, c.at(1), "depth");
  if (dv.numel() != 1) c.bad("depth must hold one value");
  const double depth_f = dv.contiguous().to(DType::kFloat64).to_vector<double>()[0];
  if (!(depth_f >= 1) || depth_f > (double)lite::kMaxValueElements) c.bad("depth " + std::to_string(depth_f));
  const int64_t depth = (int64_t)depth_f;
  const uint32_t values = c.at(2);
  if (c.m.shape(values).numel() != 2) c.bad("values must hold [off, on]");
  const Shape is = c.m.shape(index);
  const int rank = is.ndim() + 1;
  const int axis = normalize_axis(c, c.i("axis", -1), rank);
  std::vector<int64_t> pos((size_t)depth), pshape(rank, 1);
  for (int64_t i = 0; i < depth; ++i) pos[(size_t)i] = i;
  pshape[axis] = depth;
  // Indices in [-depth, depth) count from the end when negative; others match no position.
  const uint32_t idx = c.m.cast_to(c, index, DType::kFloat64);
  const uint32_t neg = o.e(OpId::k_lt, {idx, o.k(0, DType::kFloat64)});
  const uint32_t wrapped = o.e(OpId::k_where, {neg, o.e(OpId::k_add, {idx, o.k((double)depth, DType::kFloat64)}), idx});
  std::vector<int64_t> lifted(is.begin(), is.end());
  lifted.insert(lifted.begin() + axis, 1);
  const uint32_t hot = o.e(OpId::k_eq, {c.m.reshape(c, wrapped, lifted), c.m.cast_to(c, c.m.constant_of(pos, Shape(pshape)), DType::kFloat64)});
  const uint32_t flat = c.m.reshape(c, values, {2});
  const uint32_t off = c.m.reshape(c, c.m.emit(c, OpId::k_slice, {flat}, Attrs::of(int64_t{0}, int64_t{0}, int64_t{1}, int64_t{1})), {});
  const uint32_t on = c.m.reshape(c, c.m.emit(c, OpId::k_slice, {flat}, Attrs::of(int64_t{0}, int64_t{1}, int64_t{2}, int64_t{1})), {});
  return {o.e(OpId::k_where, {hot, on, off})};
}

// Hardmax: 1 at the first largest element along the axis (op set 13; before, the input read as
// 2-D as Softmax does), 0 elsewhere.
std::vector<uint32_t> hardmax(NodeCtx& c) {
  Ops o{c};
  uint32_t x = c.at(0);
  const Shape s = c.m.shape(x);
  int axis;
  if (c.m.opset < 13) {
    const int64_t a = c.i("axis", 1);
    if (a < -s.ndim() || a > s.ndim()) c.bad("axis out of range");
    const int at = (int)(a < 0 ? a + s.ndim() : a);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < s.ndim(); ++d) (d < at ? outer : inner) *= s[d];
    x = c.m.reshape(c, x, {outer, inner});
    axis = 1;
  } else {
    axis = normalize_axis(c, c.i("axis", -1), s.ndim());
  }
  const Shape xs = c.m.shape(x);
  const uint32_t arg = o.e(OpId::k_argmax, {x}, Attrs::of((int64_t)axis, true));
  std::vector<int64_t> pos((size_t)xs[axis]), pshape(xs.ndim(), 1);
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = (int64_t)i;
  pshape[axis] = xs[axis];
  uint32_t y = c.m.cast_to(c, o.e(OpId::k_eq, {c.m.constant_of(pos, Shape(pshape)), c.m.cast_to(c, arg, DType::kInt64)}), c.m.dtype(x));
  if (c.m.opset < 13) y = c.m.reshape(c, y, std::vector<int64_t>(s.begin(), s.end()));
  return {y};
}

std::vector<uint32_t> eye_like(NodeCtx& c) {
  const Shape& s = c.m.shape(c.at(0));
  if (s.ndim() != 2) c.bad("EyeLike takes a 2-D input");
  DType t = c.m.dtype(c.at(0));
  if (c.has("dtype") && !dtype_of((int32_t)c.i("dtype", 1), t)) c.unsupported("dtype " + onnx_type_name((int32_t)c.i("dtype", 1)));
  const int64_t k = c.i("k", 0);
  if (s.numel() > lite::kMaxValueElements) c.unsupported("an EyeLike over 2^31 elements");
  std::vector<double> v((size_t)s.numel(), 0.0);
  for (int64_t i = 0; i < s[0]; ++i)
    if (i + k >= 0 && i + k < s[1]) v[(size_t)(i * s[1] + i + k)] = 1;
  return {c.m.cast_to(c, c.m.constant_of(v, s), t)};
}

// x - mean over `axes`, divided by sqrt(variance + eps).
uint32_t normalized(NodeCtx& c, uint32_t x, const std::vector<int64_t>& axes, double eps) {
  Ops o{c};
  const DType t = c.m.dtype(x);
  const uint32_t mean = o.e(OpId::k_mean, {x}, Attrs::of(axes, true));
  const uint32_t d = o.e(OpId::k_sub, {x, mean});
  const uint32_t var = o.e(OpId::k_mean, {o.e(OpId::k_mul, {d, d})}, Attrs::of(axes, true));
  return o.e(OpId::k_mul, {d, o.e(OpId::k_rsqrt, {o.e(OpId::k_add, {var, o.k(eps, t)})})});
}

// GroupNormalization: op set 18 scales per group, 21 per channel.
std::vector<uint32_t> group_norm(NodeCtx& c) {
  Ops o{c};
  const uint32_t x = c.at(0);
  const Shape s = c.m.shape(x);
  if (s.ndim() < 2) c.bad("GroupNormalization takes [N, C, ...]");
  const int64_t groups = c.i("num_groups", 0), ch = s[1];
  if (groups <= 0 || ch % groups != 0) c.bad("num_groups must divide the channels");
  const uint32_t y = normalized(c, c.m.reshape(c, x, {s[0], groups, -1}), {2}, c.f("epsilon", 1e-5));
  std::vector<int64_t> per = {-1};
  for (int d = 2; d < s.ndim(); ++d) per.push_back(1);
  uint32_t scale = c.at(1), bias = c.at(2);
  if (c.m.shape(scale).numel() == groups && groups != ch) {  // per group: each repeated over its channels
    std::vector<int64_t> idx;
    for (int64_t k = 0; k < ch; ++k) idx.push_back(k / (ch / groups));
    scale = c.m.take(c, c.m.reshape(c, scale, {groups}), 0, idx);
    bias = c.m.take(c, c.m.reshape(c, bias, {groups}), 0, idx);
  }
  const uint32_t back = c.m.reshape(c, y, std::vector<int64_t>(s.begin(), s.end()));
  return {o.e(OpId::k_add, {o.e(OpId::k_mul, {back, c.m.reshape(c, scale, per)}), c.m.reshape(c, bias, per)})};
}

std::vector<uint32_t> mvn(NodeCtx& c) {
  return {normalized(c, c.at(0), c.ints("axes", {0, 2, 3}), 1e-9)};
}

std::vector<uint32_t> lp_norm(NodeCtx& c) {
  Ops o{c};
  const uint32_t x = c.at(0);
  const DType t = c.m.dtype(x);
  const int axis = normalize_axis(c, c.i("axis", -1), c.m.shape(x).ndim());
  const int64_t p = c.i("p", 2);
  if (p != 1 && p != 2) c.bad("p must be 1 or 2");
  const std::vector<int64_t> axes = {axis};
  const uint32_t norm = p == 1 ? o.e(OpId::k_sum, {o.e(OpId::k_abs, {x})}, Attrs::of(axes, true))
                               : o.e(OpId::k_sqrt, {o.e(OpId::k_sum, {o.e(OpId::k_mul, {x, x})}, Attrs::of(axes, true))});
  // A zero norm gives zeros (the spec's reference), not NaN.
  return {o.e(OpId::k_where, {o.e(OpId::k_eq, {norm, o.k(0, t)}), o.k(0, t), o.e(OpId::k_div, {x, norm})})};
}

// Larger matrices would need n! products in the expansion: refused.
constexpr int64_t kMaxDetOrder = 6;

std::vector<uint32_t> det(NodeCtx& c) {
  Mapper& m = c.m;
  const uint32_t x = c.at(0);
  const Shape xs = m.shape(x);
  const int rank = xs.ndim();
  if (rank < 2 || xs[rank - 1] != xs[rank - 2]) c.bad("Det takes [..., n, n], not " + xs.str());
  const int64_t n = xs[rank - 1];
  if (n > kMaxDetOrder) c.unsupported("Det of " + std::to_string(n) + " x " + std::to_string(n) + " matrices (at most 6 x 6)");
  if (!is_floating(m.dtype(x))) c.bad("Det takes floating-point matrices");
  const uint32_t w = m.cast_to(c, x, DType::kFloat64);
  std::vector<int64_t> batch(xs.begin(), xs.end() - 2);
  // Element (i, j) of every matrix, [...].
  std::vector<uint32_t> at((size_t)(n * n));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const uint32_t row = m.emit(c, OpId::k_slice, {w}, Attrs::of((int64_t)rank - 2, i, i + 1, int64_t{1}));
      at[(size_t)(i * n + j)] = m.reshape(c, m.emit(c, OpId::k_slice, {row}, Attrs::of((int64_t)rank - 1, j, j + 1, int64_t{1})), batch);
    }
  // The determinant of the minor on rows first.. and the columns `cols`.
  std::function<uint32_t(int64_t, const std::vector<int64_t>&)> minor = [&](int64_t first, const std::vector<int64_t>& cols) {
    if (cols.size() == 1) return at[(size_t)(first * n + cols[0])];
    uint32_t sum = kNone;
    for (size_t k = 0; k < cols.size(); ++k) {
      std::vector<int64_t> rest = cols;
      rest.erase(rest.begin() + (std::ptrdiff_t)k);
      const uint32_t term = m.emit(c, OpId::k_mul, {at[(size_t)(first * n + cols[k])], minor(first + 1, rest)});
      sum = sum == kNone ? term : m.emit(c, k % 2 ? OpId::k_sub : OpId::k_add, {sum, term});
    }
    return sum;
  };
  std::vector<int64_t> all((size_t)n);
  for (int64_t j = 0; j < n; ++j) all[(size_t)j] = j;
  const uint32_t d = n == 0 ? m.emit(c, OpId::k_fill, {}, Attrs::of(batch, 1.0, DType::kFloat64)) : minor(0, all);
  return {m.cast_to(c, d, m.dtype(x))};
}

}  // namespace

uint32_t round_half_even(NodeCtx& c, uint32_t x) { return Ops{c}.round(x); }
uint32_t floor_of(NodeCtx& c, uint32_t x) { return Ops{c}.floor(x); }
uint32_t trunc_of(NodeCtx& c, uint32_t x) { return Ops{c}.trunc(x); }

// LRN: x / (bias + alpha / size * the sum of squares over `size` neighbouring channels)^beta, the
// window floor((size - 1) / 2) channels before and ceil((size - 1) / 2) after, zeros outside.
std::vector<uint32_t> lrn(NodeCtx& c) {
  Ops o{c};
  const uint32_t x = c.at(0);
  const Shape s = c.m.shape(x);
  if (s.ndim() < 3) c.bad("LRN takes [N, C, D1, ...]");
  require_floating(c, x);
  const int64_t size = c.i("size", 0);
  if (size < 1 || size > 4096) c.bad("size must be in 1..4096");
  const DType t = c.m.dtype(x);
  const uint32_t padded = pad_axis(c, o.e(OpId::k_mul, {x, x}), 1, (size - 1) / 2, size / 2, 0.0);
  uint32_t sum = kNone;
  for (int64_t j = 0; j < size; ++j) {
    const uint32_t part = o.e(OpId::k_slice, {padded}, Attrs::of(int64_t{1}, j, j + s[1], int64_t{1}));
    sum = sum == kNone ? part : o.e(OpId::k_add, {sum, part});
  }
  const uint32_t scaled = o.e(OpId::k_add, {o.k(c.f("bias", 1.0), t), o.e(OpId::k_mul, {sum, o.k(c.f("alpha", 1e-4) / (double)size, t)})});
  return {o.e(OpId::k_div, {x, o.e(OpId::k_pow, {scaled, o.k(c.f("beta", 0.75), t)})})};
}

void add_math_ops(HandlerTable& t) {
  t["Det"] = det;
  t["LRN"] = lrn;
  t["Floor"] = [](NodeCtx& c) { return rounding(c, 0); };
  t["Ceil"] = [](NodeCtx& c) { return rounding(c, 1); };
  t["Sign"] = sign;
  t["IsNaN"] = is_nan;
  t["IsInf"] = is_inf;
  t["Mod"] = mod;
  t["OneHot"] = one_hot;
  t["Hardmax"] = hardmax;
  t["EyeLike"] = eye_like;
  t["GroupNormalization"] = group_norm;
  t["MeanVarianceNormalization"] = mvn;
  t["LpNormalization"] = lp_norm;
}

}  // namespace spore::onnx::detail
