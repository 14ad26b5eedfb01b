// Pooling the registry's 2-D pools cannot express, written with registry ops (NOTE [ONNX attention
// and losses]): 3-D and higher spatial ranks, dilations, ceil_mode over explicit padding, and
// LpPool. The input is padded explicitly (-inf for max, zeros otherwise; ceil_mode's extra cells
// at the end likewise), and each of the kernel's taps is one strided slice [N, C, out...]; the
// taps are combined by maximum or sum. An average divides by the same tap sum over a constant
// mask of the cells that count (inside the input, or inside the explicit padding too with
// count_include_pad = 1; never ceil_mode's extra cells). LpPool is (sum |x|^p)^(1/p).
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

std::vector<uint32_t> pool_by_taps(NodeCtx& c, Kind kind) {
  Mapper& m = c.m;
  const uint32_t x = c.at(0);
  const Shape xs = m.shape(x);
  if (xs.ndim() < 3) c.bad("pooling takes [N, C, D1, ...]");
  if (c.node.output_size() > 1 && !c.node.output(1).empty()) c.unsupported("MaxPool's Indices output");
  const Window w = window_of(c, xs);
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

void add_pool_nd_ops(HandlerTable& t) {
  t["MaxPool"] = pool_or_taps(t.at("MaxPool"), Kind::kMax);
  t["AveragePool"] = pool_or_taps(t.at("AveragePool"), Kind::kAverage);
  t["LpPool"] = [](NodeCtx& c) { return pool_by_taps(c, Kind::kLp); };
}

}  // namespace spore::onnx::detail
