// ONNX's GridSample (op sets 16 and 20: 2-D, and N-D from 20) written with registry ops (NOTE
// [ONNX attention and losses]). The grid's coordinates are computed at run time, so the taps are
// too: for each spatial axis the normalised coordinate is denormalised (align_corners or not),
// rounded half to even for nearest, moved inside by border clamping or reflection, and split into
// taps (1 nearest, 2 linear, 4 cubic with Keys' a = -0.75), each an integer index, a weight and,
// for zero padding, whether it lies inside. Every combination of the axes' taps gathers from the
// input flattened to [N, C, cells] at its linear index and adds value x weight. Coordinates are
// clamped to +-2^40 first, so that NaN and infinities never reach an integer cast. AffineGrid,
// which makes such grids, is here too.
#include <cmath>

#include "lite/onnx_mapper.h"

namespace spore::onnx::detail {
namespace {

struct Tap {
  uint32_t index, weight, inside;  // inside: kNone when always
};

struct Grid {
  NodeCtx& c;
  Mapper& m;
  DType t;  // the coordinates' type
  std::string padding;
  bool align;
  uint32_t e(OpId op, std::vector<uint32_t> ins) { return m.emit(c, op, ins); }
  uint32_t k(double v) { return m.scalar(v, t); }
  uint32_t add(uint32_t a, uint32_t b) { return e(OpId::k_add, {a, b}); }
  uint32_t sub(uint32_t a, uint32_t b) { return e(OpId::k_sub, {a, b}); }
  uint32_t mul(uint32_t a, uint32_t b) { return e(OpId::k_mul, {a, b}); }
  uint32_t trunc_int(uint32_t x) { return m.cast_to(c, x, DType::kInt64); }  // |x| <= 2^40 here
  uint32_t trunc(uint32_t x) { return m.cast_to(c, trunc_int(x), t); }
  uint32_t floor(uint32_t x) {
    const uint32_t w = trunc(x);
    return sub(w, m.cast_to(c, e(OpId::k_gt, {w, x}), t));
  }
  uint32_t rint(uint32_t x) {  // half to even
    const uint32_t f = floor(x), frac = sub(x, f);
    const uint32_t odd = e(OpId::k_ne, {sub(f, mul(floor(mul(f, k(0.5))), k(2))), k(0)});
    const uint32_t up = e(OpId::k_logical_or, {e(OpId::k_gt, {frac, k(0.5)}), e(OpId::k_logical_and, {e(OpId::k_eq, {frac, k(0.5)}), odd})});
    return add(f, m.cast_to(c, up, t));
  }
  uint32_t clamp(uint32_t x, double lo, double hi) { return e(OpId::k_minimum, {e(OpId::k_maximum, {x, k(lo)}), k(hi)}); }
  // Reflected into [lo, hi] by the nearer border, as often as it takes.
  uint32_t reflect(uint32_t x, double lo, double hi) {
    const double range = hi - lo;
    if (range <= 0) return e(OpId::k_where, {e(OpId::k_eq, {x, x}), k(lo), x});
    auto fold = [&](uint32_t dx, double near, double far, double sign) {  // dx >= 0 past `near`
      const uint32_t n = trunc(e(OpId::k_div, {dx, k(range)}));
      const uint32_t r = sub(dx, mul(n, k(range)));
      const uint32_t even = e(OpId::k_eq, {sub(n, mul(floor(mul(n, k(0.5))), k(2))), k(0)});
      return e(OpId::k_where, {even, add(k(near), mul(r, k(sign))), sub(k(far), mul(r, k(sign)))});
    };
    const uint32_t below = e(OpId::k_lt, {x, k(lo)}), above = e(OpId::k_gt, {x, k(hi)});
    uint32_t y = e(OpId::k_where, {below, fold(sub(k(lo), x), lo, hi, 1), x});
    return e(OpId::k_where, {above, fold(sub(x, k(hi)), hi, lo, -1), y});
  }
  // One tap at integer coordinate `at` (as t) of an axis of extent d.
  Tap tap(uint32_t at, uint32_t weight, int64_t d) {
    const double lo = align ? 0 : -0.5, hi = align ? d - 1 : d - 0.5;
    if (padding == "border") return {trunc_int(clamp(at, 0, (double)(d - 1))), weight, kNone};
    if (padding == "reflection") return {trunc_int(clamp(reflect(at, lo, hi), 0, (double)(d - 1))), weight, kNone};
    const uint32_t inside = e(OpId::k_logical_and, {e(OpId::k_ge, {at, k(0)}), e(OpId::k_lt, {at, k((double)d)})});
    return {trunc_int(clamp(at, 0, (double)(d - 1))), weight, inside};
  }
  std::vector<Tap> taps(uint32_t g, int64_t d, const std::string& mode) {
    g = e(OpId::k_where, {e(OpId::k_eq, {g, g}), clamp(g, -1099511627776.0, 1099511627776.0), k(-1099511627776.0)});
    uint32_t x = align ? mul(mul(add(g, k(1)), k(0.5)), k((double)(d - 1))) : mul(sub(mul(add(g, k(1)), k((double)d)), k(1)), k(0.5));
    if (mode == "nearest") x = rint(x);
    const double lo = align ? 0 : -0.5, hi = align ? d - 1 : d - 0.5;
    if (padding == "border") {
      const uint32_t out = e(OpId::k_logical_or, {e(OpId::k_lt, {x, k(lo)}), e(OpId::k_gt, {x, k(hi)})});
      x = e(OpId::k_where, {out, clamp(x, 0, (double)(d - 1)), x});
    } else if (padding == "reflection") {
      x = reflect(x, lo, hi);
    }
    if (mode == "nearest") {  // truncated, as the reference's integer cast
      const uint32_t at = trunc(x);
      return {tap(at, kNone, d)};
    }
    const uint32_t x0 = floor(x), f = sub(x, x0);
    if (mode == "linear") return {tap(x0, sub(k(1), f), d), tap(add(x0, k(1)), f, d)};
    const double a = -0.75;
    auto outer = [&](uint32_t s) {  // Keys' kernel for 1 <= s < 2
      return sub(mul(add(mul(sub(mul(k(a), s), k(5 * a)), s), k(8 * a)), s), k(4 * a));
    };
    auto inner = [&](uint32_t s) {  // for 0 <= s < 1
      return add(mul(mul(sub(mul(k(a + 2), s), k(a + 3)), s), s), k(1));
    };
    const uint32_t g1 = sub(k(1), f);
    return {tap(sub(x0, k(1)), outer(add(f, k(1))), d), tap(x0, inner(f), d), tap(add(x0, k(1)), inner(g1), d),
            tap(add(x0, k(2)), outer(add(g1, k(1))), d)};
  }
};

std::vector<uint32_t> grid_sample(NodeCtx& c) {
  Mapper& m = c.m;
  const uint32_t x = c.at(0), grid = c.at(1);
  const Shape xs = m.shape(x), gs = m.shape(grid);
  const int r = xs.ndim() - 2;
  if (r < 1) c.bad("X must be [N, C, D1, ...]");
  if (gs.ndim() != r + 2 || gs[0] != xs[0] || gs[r + 1] != r)
    c.bad("grid must be [N, O1, ..., O" + std::to_string(r) + ", " + std::to_string(r) + "] for a " + std::to_string(r) + "-D X");
  if (!is_floating(m.dtype(x)) || !is_floating(m.dtype(grid))) c.bad("X and grid must be floating-point");
  std::string mode = c.s("mode", m.opset >= 20 ? "linear" : "bilinear");
  if (mode == "bilinear") mode = "linear";
  if (mode == "bicubic") mode = "cubic";
  if (mode != "linear" && mode != "nearest" && mode != "cubic") c.bad("mode '" + mode + "'");
  const std::string padding = c.s("padding_mode", "zeros");
  if (padding != "zeros" && padding != "border" && padding != "reflection") c.bad("padding_mode '" + padding + "'");
  const DType ct = m.dtype(grid) == DType::kFloat16 ? DType::kFloat32 : m.dtype(grid);
  Grid g{c, m, ct, padding, c.i("align_corners", 0) != 0};
  const int64_t n = xs[0], ch = xs[1];
  std::vector<int64_t> out_spatial(gs.begin() + 1, gs.end() - 1);
  int64_t q = 1, cells = 1;
  for (int64_t o : out_spatial) q *= o;
  for (int d = 0; d < r; ++d) cells *= xs[2 + d];
  if (cells == 0) c.unsupported("GridSample over an empty input");
  // Per axis (X's order; the grid's last axis lists them innermost first): the taps over [N, Q].
  std::vector<std::vector<Tap>> axes((size_t)r);
  std::vector<int64_t> stride((size_t)r, 1);
  for (int d = r - 1; d > 0; --d) stride[(size_t)d - 1] = stride[(size_t)d] * xs[2 + d];
  const uint32_t flat_grid = m.reshape(c, m.cast_to(c, grid, ct), {n, q, r});
  for (int d = 0; d < r; ++d) {
    const uint32_t coord = m.reshape(c, m.emit(c, OpId::k_slice, {flat_grid}, Attrs::of(int64_t{2}, (int64_t)(r - 1 - d), (int64_t)(r - d), int64_t{1})), {n, q});
    axes[(size_t)d] = g.taps(coord, xs[2 + d], mode);
  }
  const DType xt = m.dtype(x);
  const uint32_t flat_x = m.reshape(c, x, {n, ch, cells});
  uint32_t y = kNone;
  std::vector<size_t> pick((size_t)r, 0);
  while (true) {
    uint32_t index = kNone, weight = kNone, inside = kNone;
    for (int d = 0; d < r; ++d) {
      const Tap& tp = axes[(size_t)d][pick[(size_t)d]];
      const uint32_t part = stride[(size_t)d] == 1 ? tp.index : g.e(OpId::k_mul, {tp.index, m.scalar((double)stride[(size_t)d], DType::kInt64)});
      index = index == kNone ? part : g.e(OpId::k_add, {index, part});
      if (tp.weight != kNone) weight = weight == kNone ? tp.weight : g.mul(weight, tp.weight);
      if (tp.inside != kNone) inside = inside == kNone ? tp.inside : g.e(OpId::k_logical_and, {inside, tp.inside});
    }
    const uint32_t wide = m.emit(c, OpId::k_expand, {m.reshape(c, index, {n, 1, q})}, Attrs::of(std::vector<int64_t>{n, ch, q}));
    uint32_t v = m.emit(c, OpId::k_gather, {flat_x, wide}, Attrs::of(int64_t{2}));
    if (inside != kNone) weight = weight == kNone ? m.cast_to(c, inside, ct) : g.e(OpId::k_where, {inside, weight, g.k(0)});
    if (weight != kNone) v = g.mul(m.cast_to(c, v, ct), m.reshape(c, weight, {n, 1, q}));
    y = y == kNone ? v : g.add(y, v);
    size_t d = 0;  // the next combination of taps
    while (d < (size_t)r && ++pick[d] == axes[d].size()) pick[d++] = 0;
    if (d == (size_t)r) break;
  }
  std::vector<int64_t> out = {n, ch};
  out.insert(out.end(), out_spatial.begin(), out_spatial.end());
  return {m.cast_to(c, m.reshape(c, y, out), xt)};
}

// AffineGrid: theta [N, r, r + 1] times the homogeneous base grid (x, y[, z], 1) of the output's
// cells, a constant [r + 1, cells] of each axis's normalised centres (or corners).
std::vector<uint32_t> affine_grid(NodeCtx& c) {
  Mapper& m = c.m;
  const uint32_t theta = c.at(0);
  const std::vector<int64_t> size = m.int_data(c, c.at(1), "size");
  const int r = (int)size.size() - 2;
  if (r != 2 && r != 3) c.bad("size must be [N, C, H, W] or [N, C, D, H, W]");
  const Shape ts = m.shape(theta);
  if (ts.ndim() != 3 || ts[0] != size[0] || ts[1] != r || ts[2] != r + 1) c.bad("theta must be [N, " + std::to_string(r) + ", " + std::to_string(r + 1) + "]");
  if (!is_floating(m.dtype(theta))) c.bad("theta must be floating-point");
  const bool align = c.i("align_corners", 0) != 0;
  int64_t cells = 1;
  for (int d = 0; d < r; ++d) {
    if (size[(size_t)(2 + d)] < 0) c.bad("a negative extent in size");
    cells *= size[(size_t)(2 + d)];
    if (cells > (int64_t{1} << 22)) c.unsupported("an AffineGrid of over 2^22 cells");
  }
  std::vector<double> base((size_t)((r + 1) * cells));
  for (int64_t p = 0; p < cells; ++p) {
    int64_t rest = p;
    for (int d = r - 1; d >= 0; --d) {  // d: spatial axis in size's order; row r - 1 - d holds it (x first)
      const int64_t len = size[(size_t)(2 + d)], i = rest % len;
      rest /= len;
      const double v = align ? (len > 1 ? -1 + 2.0 * (double)i / (double)(len - 1) : -1) : -1 + (2.0 * (double)i + 1) / (double)len;
      base[(size_t)((r - 1 - d) * cells + p)] = v;
    }
    base[(size_t)(r * cells + p)] = 1;
  }
  const DType t = m.dtype(theta);
  const uint32_t g = m.emit(c, OpId::k_matmul, {theta, m.cast_to(c, m.constant_of(base, Shape{r + 1, cells}), t)});  // [N, r, cells]
  std::vector<int64_t> out = {size[0]};
  for (int d = 0; d < r; ++d) out.push_back(size[(size_t)(2 + d)]);
  out.push_back(r);
  return {m.reshape(c, m.emit(c, OpId::k_permute, {g}, Attrs::of(std::vector<int64_t>{0, 2, 1})), out)};
}

}  // namespace

void add_grid_sample_ops(HandlerTable& t) {
  t["GridSample"] = grid_sample;
  t["AffineGrid"] = affine_grid;
}

}  // namespace spore::onnx::detail
