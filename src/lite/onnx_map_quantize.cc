// ONNX's int8 family written with registry ops (NOTE [ONNX attention and losses]):
// QuantizeLinear and DequantizeLinear (per tensor, per axis, blocked; uint8 and int8),
// DynamicQuantizeLinear, MatMulInteger, QLinearMatMul, ConvInteger and QLinearConv. The integer
// products are the exact integer results the spec defines: float32 products over runs of K short
// enough that no partial sum can pass 2^24, added in float64 (NOTE [Exact integer products in
// float32]); rounding is half to even and saturation clamps to the type's range.
#include <cmath>

#include "lite/onnx_mapper.h"
#include "spore/int8.h"

namespace spore::onnx::detail {
namespace {

struct Range {
  double lo, hi;
};
Range range_of(NodeCtx& c, DType t) {
  if (t == DType::kUInt8) return {0, 255};
  if (t == DType::kInt8) return {-128, 127};
  c.unsupported(std::string("a quantized type ") + dtype_name(t) + " (Spore maps uint8 and int8)");
}

// A scale or zero point shaped to broadcast against x: one value, one per slice along `axis`, or
// (block_size > 0) one per block of block_size slices along `axis`.
uint32_t param_for(NodeCtx& c, uint32_t p, const Shape& xs, int64_t axis_attr, int64_t block) {
  Mapper& m = c.m;
  const Shape ps = m.shape(p);
  if (ps.numel() == 1) return m.reshape(c, p, {});
  const int axis = normalize_axis(c, axis_attr, xs.ndim());
  if (block <= 0) {
    if (ps.ndim() != 1 || ps[0] != xs[axis]) c.bad("a per-axis scale or zero point must be 1-D with " + std::to_string(xs[axis]) + " values");
    std::vector<int64_t> shape((size_t)xs.ndim(), 1);
    shape[(size_t)axis] = xs[axis];
    return m.reshape(c, p, shape);
  }
  if (ps.ndim() != xs.ndim() || ps[axis] != (xs[axis] + block - 1) / block) c.bad("a blocked scale or zero point must have x's shape with ceil(extent / block_size) along axis");
  for (int d = 0; d < xs.ndim(); ++d)
    if (d != axis && ps[d] != xs[d]) c.bad("a blocked scale or zero point must have x's shape except along axis");
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < xs[axis]; ++i) idx.push_back(i / block);
  return m.take(c, p, axis, idx);
}

// round half to even of v (float64) plus zp, clamped to t's range, as t; or, for a carried type
// (NOTE [ONNX carried types]), to its range (an integer type) or rounded into it as Cast does
// (a minifloat: v + zp, saturating or not).
uint32_t saturate(NodeCtx& c, uint32_t v, uint32_t zp, DType t, const Carried* ct = nullptr, bool sat = true) {
  Mapper& m = c.m;
  if (ct && !ct->bits) {
    if (zp != kNone) v = m.emit(c, OpId::k_add, {v, m.cast_to(c, zp, DType::kFloat64)});
    return cast_to_carried(c, v, *ct, sat);
  }
  const Range r = ct ? Range{ct->is_signed ? -std::ldexp(1.0, ct->bits - 1) : 0.0, std::ldexp(1.0, ct->bits - (ct->is_signed ? 1 : 0)) - 1} : range_of(c, t);
  uint32_t q = round_half_even(c, v);
  if (zp != kNone) q = m.emit(c, OpId::k_add, {q, m.cast_to(c, zp, DType::kFloat64)});
  q = m.emit(c, OpId::k_minimum, {m.emit(c, OpId::k_maximum, {q, m.scalar(r.lo, DType::kFloat64)}), m.scalar(r.hi, DType::kFloat64)});
  const uint32_t out = m.cast_to(c, q, t);
  if (ct) m.carried[out] = ct->onnx;
  return out;
}

std::vector<uint32_t> quantize_linear(NodeCtx& c) {
  Mapper& m = c.m;
  const uint32_t x = c.at(0);
  const Shape xs = m.shape(x);
  const int64_t axis = c.i("axis", 1), block = c.i("block_size", 0);
  if (block < 0) c.bad("block_size must be >= 0");
  DType out = DType::kUInt8;
  const int32_t declared = (int32_t)c.i("output_dtype", 0);
  const Carried* ct = declared ? carried_type(declared) : nullptr;
  if (declared && !value_dtype_of(declared, out)) c.unsupported("output_dtype " + onnx_type_name(declared));
  if (c.given(2)) {
    const Carried* zct = carried_of(m, c.at(2));
    if (declared && (m.dtype(c.at(2)) != out || zct != ct)) c.bad("output_dtype and the zero point's type differ");
    out = m.dtype(c.at(2)), ct = zct;
  }
  if (!ct) range_of(c, out);
  // x / scale in the type the spec computes it in (precision, else x's), then rounded.
  DType div = m.dtype(x);
  if (c.has("precision") && c.i("precision", 0) != 0 && !dtype_of((int32_t)c.i("precision", 0), div))
    c.unsupported("precision " + onnx_type_name((int32_t)c.i("precision", 0)));
  if (!is_floating(div)) div = DType::kFloat64;
  const uint32_t scale = m.cast_to(c, param_for(c, c.at(1), xs, axis, block), div);
  const uint32_t v = m.cast_to(c, m.emit(c, OpId::k_div, {m.cast_to(c, x, div), scale}), DType::kFloat64);
  return {saturate(c, v, c.given(2) ? param_for(c, c.at(2), xs, axis, block) : kNone, out, ct, c.i("saturate", 1) != 0)};
}

std::vector<uint32_t> dequantize_linear(NodeCtx& c) {
  Mapper& m = c.m;
  const uint32_t x = c.at(0);
  const Shape xs = m.shape(x);
  const int64_t axis = c.i("axis", 1), block = c.i("block_size", 0);
  if (block < 0) c.bad("block_size must be >= 0");
  DType out = m.dtype(c.at(1));
  if (c.has("output_dtype") && c.i("output_dtype", 0) != 0 && !dtype_of((int32_t)c.i("output_dtype", 0), out))
    c.unsupported("output_dtype " + onnx_type_name((int32_t)c.i("output_dtype", 0)));
  if (m.dtype(x) != DType::kUInt8 && m.dtype(x) != DType::kInt8 && m.dtype(x) != DType::kInt32 && !carried_of(m, x))
    c.unsupported(std::string("dequantizing ") + dtype_name(m.dtype(x)));
  uint32_t d = m.cast_to(c, x, DType::kFloat32);
  if (c.given(2)) d = m.emit(c, OpId::k_sub, {d, m.cast_to(c, param_for(c, c.at(2), xs, axis, block), DType::kFloat32)});
  const DType st = m.dtype(c.at(1)) == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
  const uint32_t y = m.emit(c, OpId::k_mul, {m.cast_to(c, d, st), m.cast_to(c, param_for(c, c.at(1), xs, axis, block), st)});
  return {m.cast_to(c, y, out)};
}

std::vector<uint32_t> dynamic_quantize_linear(NodeCtx& c) {
  const DynamicQuant q = dynamic_quantize(c, c.at(0));
  return {q.q, c.m.cast_to(c, q.scale, c.m.dtype(c.at(0))), c.m.cast_to(c, q.zero_point, DType::kUInt8)};
}
// v - zp in float32 (8-bit values and zero points: exact); a 1-D zero point of `rows` values
// applies per row of a matrix ([rows, 1]).
uint32_t centered(NodeCtx& c, uint32_t v, size_t zp_input, bool per_row) {
  Mapper& m = c.m;
  uint32_t d = m.cast_to(c, v, DType::kFloat32);
  if (!c.given(zp_input)) return d;
  uint32_t zp = m.cast_to(c, c.at(zp_input), DType::kFloat32);
  const Shape zs = m.shape(zp);
  if (zs.numel() == 1) zp = m.reshape(c, zp, {});
  else if (per_row && zs.ndim() == 1) zp = m.reshape(c, zp, {zs[0], 1});
  return m.emit(c, OpId::k_sub, {d, zp});
}

// a scale: one value, or a 1-D one per row ([rows, 1]) or per column.
uint32_t scale_of(NodeCtx& c, size_t k, bool per_row) {
  Mapper& m = c.m;
  uint32_t s = c.at(k);
  const Shape ss = m.shape(s);
  if (ss.numel() == 1) return m.reshape(c, s, {});
  if (per_row && ss.ndim() == 1) return m.reshape(c, s, {ss[0], 1});
  return s;
}

// The bound on one term of a product of inputs a and b centred by the zero points at a_zp, b_zp.
double term_bound(NodeCtx& c, size_t a, size_t a_zp, size_t b, size_t b_zp) {
  return centered_bound(c, c.m.dtype(c.at(a)), c.given(a_zp) ? c.at(a_zp) : kNone) *
         centered_bound(c, c.m.dtype(c.at(b)), c.given(b_zp) ? c.at(b_zp) : kNone);
}

// MatMulInteger with a constant 2-D B, a uint8 A with one zero point and k within int32's reach:
// integer_matmul (NOTE [Integer products]), B shifted into int8 (uint8's b - 128) and its zero
// point folded into per-column offsets (128 - zb, or -zb for int8), so that
// (b - zb) = w8 + offset exactly. kNone when the node has another form.
uint32_t integer_matmul_of(NodeCtx& c) {
  Mapper& m = c.m;
  const uint32_t a = c.at(0), b = c.at(1);
  const Shape as = m.shape(a), bs = m.shape(b);
  const DType bt = m.dtype(b);
  if (m.dtype(a) != DType::kUInt8 || !m.is_constant(b) || bs.ndim() != 2 || as.ndim() < 1 || as[as.ndim() - 1] != bs[0] ||
      bs[0] == 0 || bs[0] > kIntegerMatmulMaxK || (bt != DType::kUInt8 && bt != DType::kInt8))
    return kNone;
  // A zero point per row of A, or zero points of another type than their operand's (the exact
  // path reports what the spec says of them).
  if (c.given(2) && (m.shape(c.at(2)).numel() != 1 || m.dtype(c.at(2)) != DType::kUInt8)) return kNone;
  std::vector<double> zb(1, 0.0);
  if (c.given(3)) {
    if (!m.is_constant(c.at(3)) || m.dtype(c.at(3)) != bt) return kNone;
    zb = m.float_data(c, c.at(3), "b_zero_point");
    if (zb.size() != 1 && zb.size() != (size_t)bs[1]) return kNone;  // the spec's other forms: the exact path's errors
  }
  const int64_t k = bs[0], n = bs[1];
  const Tensor bdata = m.data(c, b, "B").contiguous();
  const int shift = bt == DType::kUInt8 ? 128 : 0;
  std::vector<int8_t> w8((size_t)(k * n));
  for (int64_t i = 0; i < k * n; ++i)
    w8[(size_t)i] = (int8_t)(bt == DType::kUInt8 ? (int)bdata.data<uint8_t>()[i] - shift : (int)bdata.data<int8_t>()[i]);
  std::vector<int32_t> offset(zb.size());
  for (size_t j = 0; j < zb.size(); ++j) offset[j] = shift - (int32_t)zb[j];
  const uint32_t zp = c.given(2) ? m.reshape(c, m.cast_to(c, c.at(2), DType::kInt32), {}) : m.scalar(0, DType::kInt32);
  const uint32_t a2 = m.reshape(c, a, {as.numel() / k, k});
  const uint32_t y = m.emit(c, OpId::k_integer_matmul, {a2, zp, m.constant_of(w8, Shape{k, n}),
                                                         m.constant_of(offset, Shape{(int64_t)offset.size()})});
  std::vector<int64_t> out(as.begin(), as.end() - 1);
  out.push_back(n);
  return m.reshape(c, y, out);
}

std::vector<uint32_t> matmul_integer(NodeCtx& c) {
  Mapper& m = c.m;
  for (size_t k : {0, 1}) range_of(c, m.dtype(c.at(k)));
  if (const uint32_t y = integer_matmul_of(c); y != kNone) return {y};
  const uint32_t y = exact_integer_matmul(c, centered(c, c.at(0), 2, true), centered(c, c.at(1), 3, false), term_bound(c, 0, 2, 1, 3));
  return {m.cast_to(c, y, DType::kInt32)};
}

std::vector<uint32_t> qlinear_matmul(NodeCtx& c) {
  Mapper& m = c.m;
  for (size_t k : {0, 3}) range_of(c, m.dtype(c.at(k)));
  const uint32_t acc = m.cast_to(c, exact_integer_matmul(c, centered(c, c.at(0), 2, true), centered(c, c.at(3), 5, false), term_bound(c, 0, 2, 3, 5)),
                                  DType::kFloat64);
  // The multiplier a_scale * b_scale / y_scale in the scales' type, then applied in float64.
  const DType st = m.dtype(c.at(1));
  const uint32_t mult = m.emit(c, OpId::k_div, {m.emit(c, OpId::k_mul, {scale_of(c, 1, true), m.cast_to(c, scale_of(c, 4, false), st)}), m.cast_to(c, scale_of(c, 6, false), st)});
  const uint32_t v = m.emit(c, OpId::k_mul, {acc, m.cast_to(c, mult, DType::kFloat64)});
  const DType out = c.given(7) ? m.dtype(c.at(7)) : m.dtype(c.at(0));
  return {saturate(c, v, c.given(7) ? c.at(7) : kNone, out)};
}

// ConvInteger / QLinearConv: Conv's own mapping (every attribute) over the centred float64
// inputs; the weight's zero point is per output channel when it has one value per channel.
Handler conv_integer(Handler conv, bool qlinear) {
  return [conv, qlinear](NodeCtx& c) {
    Mapper& m = c.m;
    const size_t xi = 0, wi = qlinear ? 3 : 1, xz = qlinear ? 2 : 2, wz = qlinear ? 5 : 3;
    range_of(c, m.dtype(c.at(xi)));
    range_of(c, m.dtype(c.at(wi)));
    const uint32_t x = centered(c, c.at(xi), xz, false);
    uint32_t w = m.cast_to(c, c.at(wi), DType::kFloat32);  // 8-bit values: exact
    const Shape ws = m.shape(w);
    std::vector<int64_t> per_channel((size_t)ws.ndim(), 1);
    per_channel[0] = ws[0];
    if (c.given(wz)) {
      const uint32_t zp = m.cast_to(c, c.at(wz), DType::kFloat32);
      w = m.emit(c, OpId::k_sub, {w, m.shape(zp).numel() == 1 ? m.reshape(c, zp, {}) : m.reshape(c, zp, per_channel)});
    }
    uint32_t acc = exact_integer_conv(c, conv, x, w, term_bound(c, xi, xz, wi, wz));
    if (qlinear) acc = m.cast_to(c, acc, DType::kFloat64);  // the bias and the multiplier apply in float64
    if (qlinear && c.given(8)) {  // the int32 bias, one per output channel
      std::vector<int64_t> per_out((size_t)m.shape(acc).ndim(), 1);
      per_out[1] = m.shape(acc)[1];
      acc = m.emit(c, OpId::k_add, {acc, m.reshape(c, m.cast_to(c, c.at(8), DType::kFloat64), per_out)});
    }
    if (!qlinear) return std::vector<uint32_t>{m.cast_to(c, acc, DType::kInt32)};
    const DType st = m.dtype(c.at(1));
    auto per = [&](size_t k) {
      const uint32_t s = m.cast_to(c, c.at(k), st);
      if (m.shape(s).numel() == 1) return m.reshape(c, s, {});
      std::vector<int64_t> shape((size_t)m.shape(acc).ndim(), 1);
      shape[1] = m.shape(s).numel();
      return m.reshape(c, s, shape);
    };
    const uint32_t mult = m.emit(c, OpId::k_div, {m.emit(c, OpId::k_mul, {per(1), per(4)}), per(6)});
    const uint32_t v = m.emit(c, OpId::k_mul, {acc, m.cast_to(c, mult, DType::kFloat64)});
    const DType out = c.given(7) ? m.dtype(c.at(7)) : m.dtype(c.at(0));
    return std::vector<uint32_t>{saturate(c, v, c.given(7) ? c.at(7) : kNone, out)};
  };
}

}  // namespace

// y = saturate(round(x / scale) + zp) with scale and zp from x's range (widened to hold 0), in
// float32 as the spec's formula is written (ONNX Runtime's dynamic quantization of activations
// computes the same: one range over the whole tensor, scale 1 for an all-zero one).
DynamicQuant dynamic_quantize(NodeCtx& c, uint32_t input) {
  Mapper& m = c.m;
  const uint32_t x = m.cast_to(c, input, DType::kFloat32);
  const Shape xs = m.shape(x);
  if (xs.numel() == 0) c.unsupported("dynamic quantization of an empty tensor");
  std::vector<int64_t> all((size_t)xs.ndim());
  for (size_t a = 0; a < all.size(); ++a) all[a] = (int64_t)a;
  auto f = [&](double v) { return m.scalar(v, DType::kFloat32); };
  uint32_t hi = x, lo = x;
  if (!all.empty()) {
    hi = m.emit(c, OpId::k_max, {x}, Attrs::of(all, false));
    lo = m.emit(c, OpId::k_min, {x}, Attrs::of(all, false));
  }
  hi = m.emit(c, OpId::k_maximum, {hi, f(0)});
  lo = m.emit(c, OpId::k_minimum, {lo, f(0)});
  const uint32_t spread = m.emit(c, OpId::k_sub, {hi, lo});
  const uint32_t width = m.emit(c, OpId::k_where, {m.emit(c, OpId::k_eq, {hi, lo}), f(1), spread});
  const uint32_t scale = m.emit(c, OpId::k_div, {width, f(255)});
  uint32_t zp = m.emit(c, OpId::k_sub, {f(0), m.emit(c, OpId::k_div, {lo, scale})});
  zp = m.emit(c, OpId::k_minimum, {m.emit(c, OpId::k_maximum, {zp, f(0)}), f(255)});
  const uint32_t zpi = round_half_even(c, zp);
  const uint32_t y = saturate(c, m.cast_to(c, m.emit(c, OpId::k_div, {x, scale}), DType::kFloat64), zpi, DType::kUInt8);
  return {y, scale, zpi};
}

// com.microsoft DynamicQuantizeMatMul (ONNX Runtime's contrib op, and what `spore lite quantize`
// writes): A quantized per tensor at run time (DynamicQuantizeLinear), times B, times
// a_scale * b_scale, plus the bias. A constant int8 B with a zero zero point runs
// dynamic_quant_matmul (oneDNN's integer product, NOTE [Dynamic int8 products]); any other B
// (uint8, a zero point, computed) is taken by the definition, MatMulInteger's exact float64 sums.
std::vector<uint32_t> dynamic_quantize_matmul(NodeCtx& c) {
  Mapper& m = c.m;
  if (!is_floating(m.dtype(c.at(0)))) c.bad("A must be floating-point");
  const uint32_t a = m.cast_to(c, c.at(0), DType::kFloat32), b = c.at(1);
  const Shape as = m.shape(a), bs = m.shape(b);
  if (bs.ndim() != 2) c.unsupported("DynamicQuantizeMatMul with a " + std::to_string(bs.ndim()) + "-D B");
  range_of(c, m.dtype(b));
  if (as.ndim() < 1 || as[as.ndim() - 1] != bs[0] || bs[0] == 0)
    c.bad("A " + as.str() + " does not take B " + bs.str() + " (A's last extent must be B's first)");
  const int64_t k = bs[0], n = bs[1];
  const uint32_t scale = m.cast_to(c, c.at(2), DType::kFloat32);
  const int64_t ns = m.shape(scale).numel();
  if (ns != 1 && ns != n) c.bad("b_scale holds " + std::to_string(ns) + " values; B has " + std::to_string(n) + " columns");
  bool zero_point_zero = true;
  if (c.given(3)) {
    if (!m.is_constant(c.at(3))) c.unsupported("a b_zero_point computed at run time");
    for (double v : m.float_data(c, c.at(3), "b_zero_point")) zero_point_zero = zero_point_zero && v == 0;
  }
  std::vector<int64_t> out_shape(as.begin(), as.end());
  out_shape.back() = n;
  uint32_t y;
  if (m.dtype(b) == DType::kInt8 && zero_point_zero && m.is_constant(b)) {
    const uint32_t x2 = m.reshape(c, a, {as.numel() / k, k});
    y = m.emit(c, OpId::k_dynamic_quant_matmul, {x2, b, m.reshape(c, scale, {ns})});
    y = m.reshape(c, y, out_shape);
  } else {
    const DynamicQuant q = dynamic_quantize(c, a);
    NodeCtx integer{c.m, c.node, {q.q, b, q.zero_point, c.given(3) ? c.at(3) : kNone}, c.where};
    const uint32_t acc = m.cast_to(c, matmul_integer(integer)[0], DType::kFloat32);
    const uint32_t both = m.emit(c, OpId::k_mul, {q.scale, m.reshape(c, scale, {ns})});
    y = m.emit(c, OpId::k_mul, {acc, both});
  }
  if (c.given(4)) y = m.emit(c, OpId::k_add, {y, m.cast_to(c, c.at(4), DType::kFloat32)});
  return {y};
}

void add_quantize_ops(HandlerTable& t) {
  t["QuantizeLinear"] = quantize_linear;
  t["DequantizeLinear"] = dequantize_linear;
  t["DynamicQuantizeLinear"] = dynamic_quantize_linear;
  t["MatMulInteger"] = matmul_integer;
  t["QLinearMatMul"] = qlinear_matmul;
  t["com.microsoft/DynamicQuantizeMatMul"] = dynamic_quantize_matmul;
  t["ConvInteger"] = conv_integer(t.at("Conv"), false);
  t["QLinearConv"] = conv_integer(t.at("Conv"), true);
}

}  // namespace spore::onnx::detail
