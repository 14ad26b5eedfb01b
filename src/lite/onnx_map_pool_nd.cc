// Pooling the registry's 2-D pools cannot express, written with registry ops (NOTE [ONNX attention
// and losses]): 3-D and higher spatial ranks, dilations, ceil_mode over explicit padding, and
// LpPool. The input is padded explicitly (-inf for max, zeros otherwise; ceil_mode's extra cells
// at the end likewise), and each of the kernel's taps is one strided slice [N, C, out...]; the
// taps are combined by maximum or sum. An average divides by the same tap sum over a constant
// mask of the cells that count (inside the input, or inside the explicit padding too with
// count_include_pad = 1; never ceil_mode's extra cells). LpPool is (sum |x|^p)^(1/p). MaxPool's
// Indices output and MaxUnpool are here too.
#include <cmath>

#include "lite/onnx_mapper.h"

namespace spore::onnx::detail {
namespace {

enum class Kind { kMax, kAverage, kLp };

struct Window {
  std::vector<int64_t> kernel, strides, dilations, begin, end, extra, out;
};

Window window_of(NodeCtx& c, const Shape& xs) {
  const int r = xs.ndim() - 2;
  Window w;
  if (!c.has("kernel_shape")) c.bad("kernel_shape is required");
  w.kernel = c.ints("kernel_shape");
  w.strides = c.ints("strides", std::vector<int64_t>((size_t)r, 1));
  w.dilations = c.ints("dilations", std::vector<int64_t>((size_t)r, 1));
  std::vector<int64_t> pads = c.ints("pads", std::vector<int64_t>((size_t)(2 * r), 0));
  if ((int)w.kernel.size() != r || (int)w.strides.size() != r || (int)w.dilations.size() != r || (int)pads.size() != 2 * r)
    c.bad("kernel_shape, strides, dilations and pads must have one value per spatial axis (pads two)");
  const std::string auto_pad = c.s("auto_pad", "NOTSET");
  const bool ceil = c.i("ceil_mode", 0) != 0;
  for (int d = 0; d < r; ++d) {
    const int64_t in = xs[2 + d], k = w.kernel[(size_t)d], s = w.strides[(size_t)d], dl = w.dilations[(size_t)d];
    if (k < 1 || s < 1 || dl < 1 || k > 4096 || dl > 4096) c.bad("kernel, stride and dilation must be in 1..4096");
    const int64_t span = (k - 1) * dl + 1;
    int64_t pb = pads[(size_t)d], pe = pads[(size_t)(d + r)];
    if (auto_pad == "VALID") {
      pb = pe = 0;
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t o = (in + s - 1) / s, total = std::max<int64_t>(0, (o - 1) * s + span - in);
      pb = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pe = total - pb;
    } else if (auto_pad != "NOTSET") {
      c.bad("auto_pad '" + auto_pad + "' is not an ONNX value");
    }
    if (pb < 0 || pe < 0) c.bad("a negative pad");
    if (pb > span || pe > span) c.unsupported("padding wider than the kernel's span");
    const int64_t room = in + pb + pe - span;
    if (room < 0) c.bad("the kernel's span " + std::to_string(span) + " is larger than the padded input " + std::to_string(in + pb + pe));
    int64_t o = (ceil ? (room + s - 1) / s : room / s) + 1;
    if (ceil && (o - 1) * s >= in + pb) --o;  // the last window must start inside the input or the front padding
    w.begin.push_back(pb);
    w.end.push_back(pe);
    w.out.push_back(o);
    w.extra.push_back((o - 1) * s + span - (in + pb + pe));  // ceil_mode's cells (negative: cut)
  }
  return w;
}

// Sum (or maximum) over the kernel's taps of the padded x.
uint32_t taps(NodeCtx& c, uint32_t padded, const Window& w, bool max) {
  const int r = (int)w.kernel.size();
  std::vector<int64_t> pick((size_t)r, 0);
  uint32_t y = kNone;
  while (true) {
    uint32_t v = padded;
    for (int d = 0; d < r; ++d) {
      const int64_t from = pick[(size_t)d] * w.dilations[(size_t)d];
      v = c.m.emit(c, OpId::k_slice, {v}, Attrs::of((int64_t)(2 + d), from, from + (w.out[(size_t)d] - 1) * w.strides[(size_t)d] + 1, w.strides[(size_t)d]));
    }
    y = y == kNone ? v : c.m.emit(c, max ? OpId::k_maximum : OpId::k_add, {y, v});
    int d = 0;
    while (d < r && ++pick[(size_t)d] == w.kernel[(size_t)d]) pick[(size_t)d++] = 0;
    if (d == r) return y;
  }
}

uint32_t padded(NodeCtx& c, uint32_t x, const Window& w, double pad, double extra) {
  for (size_t d = 0; d < w.kernel.size(); ++d) {
    x = pad_axis(c, x, (int)(2 + d), w.begin[d], w.end[d], pad);
    if (w.extra[d] != 0) x = pad_axis(c, x, (int)(2 + d), 0, w.extra[d], extra);
  }
  return x;
}

// MaxPool with its Indices output: the maximum and, per output cell, the flat index (over
// [N, C, D1, ...], row-major, or column-major over 2-D spatial axes with storage_order = 1) of its
// first largest input cell: each tap replaces the running best only where strictly larger.
std::vector<uint32_t> max_pool_with_indices(NodeCtx& c, uint32_t x, const Window& w) {
  Mapper& m = c.m;
  const Shape xs = m.shape(x);
  const int r = xs.ndim() - 2;
  const bool column_major = c.i("storage_order", 0) != 0;
  if (column_major && r != 2) c.unsupported("storage_order = 1 beyond 2-D");
  int64_t cells = 1, outs = 1;
  for (int d = 0; d < r; ++d) cells *= xs[2 + d], outs *= w.out[(size_t)d];
  std::vector<int64_t> stride((size_t)r, 1);
  if (column_major) stride = {1, xs[2]};
  else
    for (int d = r - 2; d >= 0; --d) stride[(size_t)d] = stride[(size_t)d + 1] * xs[3 + d];
  std::vector<int64_t> base((size_t)(xs[0] * xs[1]));  // each (n, c)'s offset
  for (size_t i = 0; i < base.size(); ++i) base[i] = (int64_t)i * cells;
  std::vector<int64_t> base_shape = {xs[0], xs[1]}, out_shape = {1, 1};
  for (int d = 0; d < r; ++d) base_shape.push_back(1), out_shape.push_back(w.out[(size_t)d]);
  const uint32_t offset = m.constant_of(base, Shape(base_shape));
  const uint32_t padded_x = padded(c, m.cast_to(c, x, is_floating(m.dtype(x)) ? m.dtype(x) : DType::kFloat32), w, -INFINITY, -INFINITY);
  std::vector<int64_t> pick((size_t)r, 0);
  uint32_t best = kNone, best_index = kNone;
  while (true) {
    uint32_t v = padded_x;
    std::vector<int64_t> index((size_t)outs);
    for (int64_t o = 0; o < outs; ++o) {  // the tap's input cell for output cell o (0 in padding: never the maximum)
      int64_t rest = o, flat = 0;
      for (int d = r - 1; d >= 0; --d) {
        const int64_t od = rest % w.out[(size_t)d];
        rest /= w.out[(size_t)d];
        const int64_t p = od * w.strides[(size_t)d] + pick[(size_t)d] * w.dilations[(size_t)d] - w.begin[(size_t)d];
        flat += std::max<int64_t>(0, std::min<int64_t>(p, xs[2 + d] - 1)) * stride[(size_t)d];
      }
      index[(size_t)o] = flat;
    }
    for (int d = 0; d < r; ++d) {
      const int64_t from = pick[(size_t)d] * w.dilations[(size_t)d];
      v = m.emit(c, OpId::k_slice, {v}, Attrs::of((int64_t)(2 + d), from, from + (w.out[(size_t)d] - 1) * w.strides[(size_t)d] + 1, w.strides[(size_t)d]));
    }
    const uint32_t at = m.emit(c, OpId::k_add, {m.constant_of(index, Shape(out_shape)), offset});
    if (best == kNone) {
      best = v, best_index = at;
    } else {
      const uint32_t better = m.emit(c, OpId::k_gt, {v, best});
      best = m.emit(c, OpId::k_where, {better, v, best});
      best_index = m.emit(c, OpId::k_where, {better, at, best_index});
    }
    int d = 0;
    while (d < r && ++pick[(size_t)d] == w.kernel[(size_t)d]) pick[(size_t)d++] = 0;
    if (d == r) break;
  }
  return {m.cast_to(c, best, m.dtype(x)), best_index};
}

std::vector<uint32_t> pool_by_taps(NodeCtx& c, Kind kind) {
  Mapper& m = c.m;
  const uint32_t x = c.at(0);
  const Shape xs = m.shape(x);
  if (xs.ndim() < 3) c.bad("pooling takes [N, C, D1, ...]");
  const Window w = window_of(c, xs);
  if (kind == Kind::kMax && c.node.output_size() > 1 && !c.node.output(1).empty()) {
    if (xs.numel() > lite::kMaxValueElements) c.unsupported("MaxPool's Indices over 2^31 cells");
    return max_pool_with_indices(c, x, w);
  }
  int64_t taps_count = 1;
  for (int64_t k : w.kernel) taps_count *= k;
  if (taps_count > 4096) c.unsupported("a pooling window of " + std::to_string(taps_count) + " taps (at most 4096)");
  const DType t = m.dtype(x);
  const DType ft = is_floating(t) ? t : DType::kFloat32;  // 8-bit max pooling: exact in float32
  if (!is_floating(t) && (kind != Kind::kMax || (t != DType::kUInt8 && t != DType::kInt8))) c.bad("pooling takes a floating-point input");
  uint32_t v = m.cast_to(c, x, ft);
  if (kind == Kind::kMax) return {m.cast_to(c, taps(c, padded(c, v, w, -INFINITY, -INFINITY), w, true), t)};
  const double p = kind == Kind::kLp ? (double)c.i("p", 2) : 1;
  if (kind == Kind::kLp) {
    if (p <= 0) c.bad("p must be > 0");
    v = m.emit(c, OpId::k_pow, {m.emit(c, OpId::k_abs, {v}), m.scalar(p, ft)});
  }
  uint32_t y = taps(c, padded(c, v, w, 0, 0), w, false);
  if (kind == Kind::kLp) return {m.emit(c, OpId::k_pow, {y, m.scalar(1 / p, ft)})};
  // The divisor: the tap sum of a mask of the cells that count.
  const bool include_pad = c.i("count_include_pad", 0) != 0;
  std::vector<int64_t> ones_shape = {1, 1};
  for (int d = 2; d < xs.ndim(); ++d) ones_shape.push_back(xs[d]);
  const uint32_t ones = m.emit(c, OpId::k_fill, {}, Attrs::of(ones_shape, 1.0, ft));
  const uint32_t count = taps(c, padded(c, ones, w, include_pad ? 1.0 : 0.0, 0.0), w, false);
  return {m.emit(c, OpId::k_div, {y, count})};
}

// Whether the registry's 2-D pools (onnx_import.cc) can run this node.
bool needs_taps(NodeCtx& c) {
  const Shape& xs = c.m.shape(c.at(0));
  if (c.node.output_size() > 1 && !c.node.output(1).empty()) return true;  // MaxPool's Indices
  if (xs.ndim() != 3 && xs.ndim() != 4) return true;
  for (int64_t d : c.ints("dilations"))
    if (d != 1) return true;
  if (c.i("ceil_mode", 0) != 0) {
    for (int64_t p : c.ints("pads"))
      if (p != 0) return true;
    const std::string a = c.s("auto_pad", "NOTSET");
    return a == "SAME_UPPER" || a == "SAME_LOWER";
  }
  return false;
}

Handler pool_or_taps(Handler registry_pool, Kind kind) {
  return [registry_pool, kind](NodeCtx& c) { return needs_taps(c) ? pool_by_taps(c, kind) : registry_pool(c); };
}

}  // namespace

// MaxUnpool: the values scattered onto zeros at their flat indices (MaxPool's Indices), the
// output's shape from output_shape or from the pooling geometry.
std::vector<uint32_t> max_unpool(NodeCtx& c) {
  Mapper& m = c.m;
  const uint32_t x = c.at(0), idx = c.at(1);
  const Shape xs = m.shape(x);
  const int r = xs.ndim() - 2;
  if (r < 1) c.bad("MaxUnpool takes [N, C, D1, ...]");
  if (m.shape(idx) != xs) c.bad("I must have X's shape");
  // The indices address the shape the pooling geometry gives; a given output_shape then holds that
  // result in its leading corner (zeros elsewhere), as the spec's reference places it.
  std::vector<int64_t> inferred = {xs[0], xs[1]};
  const std::vector<int64_t> k = c.ints("kernel_shape"), s = c.ints("strides", std::vector<int64_t>((size_t)r, 1)),
                             p = c.ints("pads", std::vector<int64_t>((size_t)(2 * r), 0));
  if ((int)k.size() != r || (int)s.size() != r || (int)p.size() != 2 * r) c.bad("kernel_shape, strides and pads must match the spatial rank");
  for (int d = 0; d < r; ++d) {
    inferred.push_back((xs[2 + d] - 1) * s[(size_t)d] - p[(size_t)d] - p[(size_t)(d + r)] + k[(size_t)d]);
    if (inferred.back() < 1) c.bad("the unpooled extent along spatial axis " + std::to_string(d) + " is below 1");
  }
  std::vector<int64_t> out = inferred;
  if (c.given(2)) {
    out = m.int_data(c, c.at(2), "output_shape");
    if ((int)out.size() != xs.ndim() || out[0] != xs[0] || out[1] != xs[1]) c.bad("output_shape must be [N, C, D1, ...] of X's N and C");
  }
  for (const auto& shape : {inferred, out})
    if (checked_numel(shape, c.where + " output") > lite::kMaxValueElements) c.unsupported("a MaxUnpool output over 2^31 elements");
  const int64_t total = checked_numel(inferred, c.where + " output");
  const uint32_t zeros = m.emit(c, OpId::k_fill, {}, Attrs::of(std::vector<int64_t>{total}, 0.0, m.dtype(x)));
  uint32_t y = m.emit(c, OpId::k_scatter_add, {zeros, m.reshape(c, m.cast_to(c, idx, DType::kInt64), {-1}), m.reshape(c, x, {-1})},
                      Attrs::of(int64_t{0}));
  y = m.reshape(c, y, inferred);
  for (int d = 0; d < r; ++d) y = pad_axis(c, y, 2 + d, 0, out[(size_t)(2 + d)] - inferred[(size_t)(2 + d)], 0.0);
  return {y};
}

void add_pool_nd_ops(HandlerTable& t) {
  t["MaxUnpool"] = max_unpool;
  t["MaxPool"] = pool_or_taps(t.at("MaxPool"), Kind::kMax);
  t["AveragePool"] = pool_or_taps(t.at("AveragePool"), Kind::kAverage);
  t["LpPool"] = [](NodeCtx& c) { return pool_by_taps(c, Kind::kLp); };
}

}  // namespace spore::onnx::detail
