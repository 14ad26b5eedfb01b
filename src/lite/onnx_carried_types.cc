// ONNX element types Spore has no dtype for, carried in a wider dtype (NOTE [ONNX carried types]):
// the table of carried types, their initializers' bytes decoded, the casts into them (rounding to
// a minifloat, wrapping or truncating to a narrow integer) and the rule that keeps every other
// op's results inside the type.
#include <cmath>
#include <set>

#include "lite/onnx_mapper.h"

namespace spore::onnx::detail {
namespace {

// ONNX's TensorProto.DataType numbers past the ones Debian's libonnx (1.12) names.
constexpr int32_t kFloat8E4M3FN = 17, kFloat8E4M3FNUZ = 18, kFloat8E5M2 = 19, kFloat8E5M2FNUZ = 20, kUInt4 = 21, kInt4 = 22,
                  kFloat4E2M1 = 23, kFloat8E8M0 = 24, kUInt2 = 25, kInt2 = 26;

// The carriers: the narrowest Spore dtype in which a sum or a product of two of the type's values
// is exact, so that an op computed in the carrier and wrapped back equals the op in the type
// (uint16 needs int64: 65535^2 passes int32). uint32's products need 64 bits unsigned: its Mul
// and Pow are refused.
const Carried kCarried[] = {
    {TensorProto::INT16, "int16", DType::kInt32, 16, true},
    {TensorProto::UINT16, "uint16", DType::kInt64, 16, false},
    {TensorProto::UINT32, "uint32", DType::kInt64, 32, false},
    {kInt4, "int4", DType::kInt8, 4, true},
    {kUInt4, "uint4", DType::kUInt8, 4, false},
    {kInt2, "int2", DType::kInt8, 2, true},
    {kUInt2, "uint2", DType::kUInt8, 2, false},
    // minifloats: exponent bits, mantissa bits, bias, largest finite value, what a value past it
    // becomes without saturation, whether -0 exists
    {kFloat8E4M3FN, "float8e4m3fn", DType::kFloat32, 0, true, 4, 3, 7, 448, Carried::kNaN, true},
    {kFloat8E4M3FNUZ, "float8e4m3fnuz", DType::kFloat32, 0, true, 4, 3, 8, 240, Carried::kNaN, false},
    {kFloat8E5M2, "float8e5m2", DType::kFloat32, 0, true, 5, 2, 15, 57344, Carried::kInf, true},
    {kFloat8E5M2FNUZ, "float8e5m2fnuz", DType::kFloat32, 0, true, 5, 2, 16, 57344, Carried::kNaN, false},
    {kFloat4E2M1, "float4e2m1", DType::kFloat32, 0, true, 2, 1, 1, 6, Carried::kSaturate, true},
    {kFloat8E8M0, "float8e8m0", DType::kFloat32, 0, false, 8, 0, 127, 0x1p127, Carried::kNaN, false},
};

// One element of a minifloat from its bits.
double decode_minifloat(const Carried& t, uint32_t b) {
  if (t.onnx == kFloat8E8M0) return b == 0xFF ? NAN : std::ldexp(1.0, (int)b - 127);
  const int mbits = t.mant, ebits = t.exp_bits;
  const bool neg = (b >> (ebits + mbits)) & 1;
  const uint32_t e = (b >> mbits) & ((1u << ebits) - 1), m = b & ((1u << mbits) - 1);
  if (!t.neg_zero && neg && e == 0 && m == 0) return NAN;  // the fnuz types' one NaN: the -0 pattern
  if (t.onnx == kFloat8E4M3FN && e == 15 && m == 7) return NAN;
  if (t.onnx == kFloat8E5M2 && e == 31) return m ? NAN : neg ? -INFINITY : INFINITY;
  const double mag = e == 0 ? std::ldexp((double)m, 1 - t.bias - mbits) : std::ldexp(1.0 + std::ldexp((double)m, -mbits), (int)e - t.bias);
  return neg ? -mag : mag;
}

// One element of a narrow integer type from its low bits.
int64_t decode_int(const Carried& t, uint64_t b) {
  b &= t.bits == 64 ? ~0ull : (1ull << t.bits) - 1;
  if (t.is_signed && (b >> (t.bits - 1)) & 1) return (int64_t)b - (int64_t)(1ull << t.bits);
  return (int64_t)b;
}

struct Ops {
  NodeCtx& c;
  uint32_t e(OpId op, std::vector<uint32_t> ins) { return c.m.emit(c, op, ins); }
  uint32_t k(double v) { return c.m.scalar(v, DType::kFloat64); }
  uint32_t f64(uint32_t x) { return c.m.cast_to(c, x, DType::kFloat64); }
  uint32_t where(uint32_t cond, uint32_t a, uint32_t b) { return e(OpId::k_where, {cond, a, b}); }
  uint32_t pow2(uint32_t exponent) { return e(OpId::k_pow, {k(2), exponent}); }
};

// floor(log2(a)) for finite a > 0 (float64): the logarithm's estimate corrected by exact powers of
// two, so that 2^e <= a < 2^(e+1) holds exactly.
uint32_t exponent_of(NodeCtx& c, uint32_t a) {
  Ops o{c};
  uint32_t e = floor_of(c, o.e(OpId::k_div, {o.e(OpId::k_log, {a}), o.k(std::log(2.0))}));
  for (int pass = 0; pass < 2; ++pass) {
    const uint32_t p = o.pow2(e);
    e = o.e(OpId::k_sub, {e, c.m.cast_to(c, o.e(OpId::k_gt, {p, a}), DType::kFloat64)});
    e = o.e(OpId::k_add, {e, c.m.cast_to(c, o.e(OpId::k_le, {o.e(OpId::k_mul, {o.pow2(e), o.k(2)}), a}), DType::kFloat64)});
  }
  return e;
}

// x (float64) rounded half to even to the minifloat t, as its Cast (saturate) defines: past the
// largest finite value (after rounding) and at +-inf, +-max when saturating, else inf or NaN as the
// type has; NaN stays NaN (float4e2m1, which has none, gives -0 as ONNX's reference does).
uint32_t round_minifloat(NodeCtx& c, uint32_t x, const Carried& t, bool saturate) {
  Ops o{c};
  const uint32_t a = o.e(OpId::k_abs, {x});
  const uint32_t finite = o.e(OpId::k_lt, {a, o.k(INFINITY)});
  const uint32_t safe = o.where(o.e(OpId::k_logical_and, {finite, o.e(OpId::k_gt, {a, o.k(0)})}), a, o.k(1));
  const uint32_t e = o.e(OpId::k_maximum, {exponent_of(c, safe), o.k(1 - t.bias)});  // subnormals share the lowest exponent
  const uint32_t quantum = o.pow2(o.e(OpId::k_sub, {e, o.k(t.mant)}));
  uint32_t r = o.e(OpId::k_mul, {round_half_even(c, o.e(OpId::k_div, {a, quantum})), quantum});
  r = o.where(o.e(OpId::k_gt, {a, o.k(0)}), r, o.k(0));
  const bool sat = saturate || t.overflow == Carried::kSaturate;
  const uint32_t big = sat ? o.k(t.max) : o.k(t.overflow == Carried::kInf ? INFINITY : NAN);
  r = o.where(o.e(OpId::k_logical_or, {o.e(OpId::k_gt, {r, o.k(t.max)}), o.e(OpId::k_logical_not, {finite})}), big, r);
  r = o.where(o.e(OpId::k_lt, {x, o.k(0)}), o.e(OpId::k_neg, {r}), r);
  if (!t.neg_zero) r = o.e(OpId::k_add, {r, o.k(0)});  // -0 + 0 is +0
  const uint32_t nan = o.e(OpId::k_ne, {x, x});
  r = o.where(nan, o.k(t.overflow == Carried::kSaturate ? -0.0 : NAN), r);
  return c.m.cast_to(c, r, DType::kFloat32);
}

// x (float64) as float8e8m0 (2^-127 .. 2^127), as ONNX's reference computes it from float32's
// exponent field f (0 below 2^-126): f, raised by one for round_mode "up" when x has a fraction
// (any bit below its leading one), for "nearest" at a fraction of one half or more (below 2^-126:
// past 2^-127), and not for "down"; raising 254 stops there when saturating and gives NaN
// otherwise. NaN stays NaN; +-inf gives the largest value when saturating (the spec's table),
// else NaN. A negative x is unspecified: its magnitude is taken, as the reference does.
uint32_t round_e8m0(NodeCtx& c, uint32_t x, const Carried& t, bool saturate, const std::string& mode) {
  Ops o{c};
  if (mode != "up" && mode != "down" && mode != "nearest") c.bad("round_mode must be up, down or nearest, not '" + mode + "'");
  const uint32_t a = o.e(OpId::k_abs, {x});
  const uint32_t finite = o.e(OpId::k_lt, {a, o.k(INFINITY)});
  const uint32_t normal = o.e(OpId::k_logical_and, {finite, o.e(OpId::k_ge, {a, o.k(0x1p-126)})});
  const uint32_t safe = o.where(normal, a, o.k(1));
  const uint32_t e = exponent_of(c, safe);
  const uint32_t p = o.pow2(e);
  const uint32_t frac = o.e(OpId::k_div, {o.e(OpId::k_sub, {safe, p}), p});  // safe = 2^e (1 + frac)
  uint32_t f = o.where(normal, o.e(OpId::k_add, {e, o.k(127)}), o.k(0));
  uint32_t up = kNone;
  if (mode == "up") up = o.where(normal, o.e(OpId::k_gt, {frac, o.k(0)}), o.e(OpId::k_gt, {a, o.k(0)}));
  if (mode == "nearest") up = o.where(normal, o.e(OpId::k_ge, {frac, o.k(0.5)}), o.e(OpId::k_gt, {a, o.k(0x1p-127)}));
  if (up != kNone) {
    if (saturate) up = o.e(OpId::k_logical_and, {up, o.e(OpId::k_lt, {f, o.k(254)})});
    f = o.e(OpId::k_add, {f, c.m.cast_to(c, up, DType::kFloat64)});
  }
  uint32_t r = o.where(o.e(OpId::k_gt, {f, o.k(254)}), o.k(NAN), o.pow2(o.e(OpId::k_sub, {f, o.k(127)})));
  r = o.where(finite, r, saturate ? o.k(t.max) : o.k(NAN));
  r = o.where(o.e(OpId::k_ne, {x, x}), o.k(NAN), r);
  return c.m.cast_to(c, r, DType::kFloat32);
}

// v (float64, whole) wrapped into t's range: its low t.bits bits read as t reads them.
uint32_t wrap_f64(NodeCtx& c, uint32_t v, const Carried& t) {
  Ops o{c};
  const double span = std::ldexp(1.0, t.bits);
  uint32_t r = o.e(OpId::k_sub, {v, o.e(OpId::k_mul, {floor_of(c, o.e(OpId::k_div, {v, o.k(span)})), o.k(span)})});
  if (t.is_signed) r = o.where(o.e(OpId::k_ge, {r, o.k(span / 2)}), o.e(OpId::k_sub, {r, o.k(span)}), r);
  return r;
}

// Ops whose outputs never have their inputs' element type (indices, shapes, truth values).
const std::set<std::string>& native_results() {
  static const std::set<std::string> s = {"Shape", "Size", "ArgMax", "ArgMin", "NonZero", "Equal", "Less", "LessOrEqual",
                                          "Greater", "GreaterOrEqual", "IsNaN", "IsInf"};
  return s;
}
// Ops that only move, select or copy elements: their results are the type's values already.
const std::set<std::string>& moving_ops() {
  static const std::set<std::string> s = {"Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Concat", "Slice",
                                          "Gather", "GatherElements", "GatherND", "Expand", "Tile", "Split", "Where", "Max", "Min",
                                          "ReduceMax", "ReduceMin", "Pad", "DepthToSpace", "SpaceToDepth", "ReverseSequence", "Trilu"};
  return s;
}
// Integer arithmetic: computed in the carrier, then wrapped into the type.
const std::set<std::string>& wrapping_ops() {
  static const std::set<std::string> s = {"Add", "Sub", "Mul", "Div", "Mod", "Neg", "Abs", "Sum", "Pow", "Sign", "CumSum",
                                          "ReduceSum", "ReduceProd", "Clip"};
  return s;
}
// Ops that read or make carried types themselves (they record their results' types).
const std::set<std::string>& typing_ops() {
  static const std::set<std::string> s = {"Cast", "CastLike", "QuantizeLinear", "DequantizeLinear", "BitCast", "BitShift",
                                          "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot"};
  return s;
}

}  // namespace

const Carried* carried_type(int32_t onnx) {
  for (const Carried& t : kCarried)
    if (t.onnx == onnx) return &t;
  return nullptr;
}

const Carried* carried_of(const Mapper& m, uint32_t id) {
  if (id == kNone) return nullptr;
  auto it = m.carried.find(id);
  return it == m.carried.end() ? nullptr : carried_type(it->second);
}

bool value_dtype_of(int32_t t, DType& out) {
  if (dtype_of(t, out)) return true;
  if (const Carried* ct = carried_type(t)) {
    out = ct->carrier;
    return true;
  }
  return false;
}

std::string carried_name(int32_t t) {
  const Carried* ct = carried_type(t);
  return ct ? ct->name : "";
}

Tensor carried_tensor_of(const TensorProto& t, const Carried& ct, const std::string& what) {
  if (t.data_location() == TensorProto::EXTERNAL || t.external_data_size() > 0)
    fail(ErrorCode::kUnsupported, what + " keeps its data in an external file; save the model with its data inside");
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  const int64_t n = checked_numel(dims, what);
  if (n > lite::kMaxValueElements) fail(ErrorCode::kUnsupported, what + " has over Lite's 2^31 elements per value");
  // Bits per element as stored: 4- and 2-bit types pack two or four to a byte (low bits first),
  // in raw data and in int32_data alike (one byte per int32 there).
  const int packed = ct.bits == 4 || ct.exp_bits == 2 ? 2 : ct.bits == 2 ? 4 : 1;
  const int width = ct.bits == 16 ? 2 : ct.bits == 32 ? 4 : 1;
  const int64_t units = (n + packed - 1) / packed;
  // The data present must match the shape before anything is allocated: a hostile file may declare
  // a huge shape and carry no data.
  const bool raw = t.has_raw_data();
  const int64_t held = raw ? (int64_t)t.raw_data().size() / width
                       : ct.onnx == TensorProto::UINT32 ? t.uint64_data_size() : t.int32_data_size();
  if ((raw && (int64_t)t.raw_data().size() != units * width) || (!raw && held != units))
    fail(ErrorCode::kFormat, what + " holds " + (raw ? std::to_string(t.raw_data().size()) + " bytes of raw data" : std::to_string(held) + " values") +
                                 "; its shape and type need " + std::to_string(raw ? units * width : units));
  auto unit = [&](int64_t i) -> uint64_t {
    if (!raw) return ct.onnx == TensorProto::UINT32 ? t.uint64_data((int)i) : (uint32_t)t.int32_data((int)i);
    const auto* p = reinterpret_cast<const uint8_t*>(t.raw_data().data()) + i * width;
    uint64_t v = 0;
    for (int b = 0; b < width; ++b) v |= (uint64_t)p[b] << (8 * b);  // little-endian
    return v;
  };
  const int sub = 8 / packed;  // bits per element within a packed byte
  Tensor out = Tensor::empty(Shape(dims), ct.carrier, Device::cpu());
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t bits = packed == 1 ? unit(i) : (unit(i / packed) >> (sub * (i % packed))) & ((1u << sub) - 1);
    if (!ct.bits) {
      static_cast<float*>(out.data_ptr())[i] = (float)decode_minifloat(ct, (uint32_t)bits);
      continue;
    }
    const int64_t v = decode_int(ct, bits);
    switch (ct.carrier) {
      case DType::kInt8: static_cast<int8_t*>(out.data_ptr())[i] = (int8_t)v; break;
      case DType::kUInt8: static_cast<uint8_t*>(out.data_ptr())[i] = (uint8_t)v; break;
      case DType::kInt32: static_cast<int32_t*>(out.data_ptr())[i] = (int32_t)v; break;
      default: static_cast<int64_t*>(out.data_ptr())[i] = v; break;  // kInt64
    }
  }
  return out;
}

uint32_t cast_to_carried(NodeCtx& c, uint32_t x, const Carried& t, bool saturate, const std::string& round_mode) {
  Mapper& m = c.m;
  Ops o{c};
  uint32_t r;
  if (t.bits) {
    const uint32_t v = o.f64(x);
    if (is_floating(m.dtype(x))) {
      // Out of range is undefined in the spec; ONNX's reference (ml_dtypes) truncates and gives 0
      // past the range, and NaN gives 0: Spore does the same.
      const uint32_t whole = trunc_of(c, v);
      const double lo = t.is_signed ? -std::ldexp(1.0, t.bits - 1) : 0, hi = t.is_signed ? std::ldexp(1.0, t.bits - 1) - 1 : std::ldexp(1.0, t.bits) - 1;
      const uint32_t inside = o.e(OpId::k_logical_and, {o.e(OpId::k_ge, {whole, o.k(lo)}), o.e(OpId::k_le, {whole, o.k(hi)})});
      r = o.where(inside, whole, o.k(0));
    } else {
      r = wrap_f64(c, v, t);  // integers keep their low bits (the spec's rule for fixed point)
    }
    r = m.cast_to(c, r, t.carrier);
  } else {
    const uint32_t v = o.f64(x);
    r = t.onnx == kFloat8E8M0 ? round_e8m0(c, v, t, saturate, round_mode) : round_minifloat(c, v, t, saturate);
  }
  if (r == x) r = m.emit(c, OpId::k_copy, {x});  // a value of its own, so that its type is its own
  m.carried[r] = t.onnx;
  return r;
}

uint32_t wrap_to_carried(NodeCtx& c, uint32_t x, const Carried& t) {
  const uint32_t r = c.m.cast_to(c, wrap_f64(c, c.m.cast_to(c, x, DType::kFloat64), t), t.carrier);
  c.m.carried[r] = t.onnx;
  return r;
}

bool widen_bfloat16(NodeCtx& c) {
  const std::string& op = c.node.op_type();
  if (typing_ops().count(op) || moving_ops().count(op) || native_results().count(op)) return false;
  if (op == "Softmax" || op == "Attention") return false;  // they round as their function bodies do
  if (op == "LayerNormalization") return false;             // its Mean and InvStdDev are float32 by spec
  if (c.node.domain() != "" && c.node.domain() != "ai.onnx") return false;
  bool any = false;
  for (uint32_t& id : c.in)
    if (id != kNone && c.m.dtype(id) == DType::kBFloat16) {
      id = c.m.cast_to(c, id, DType::kFloat32);
      any = true;
    }
  return any;
}

uint32_t softmax_bfloat16_steps(NodeCtx& c, uint32_t x, int64_t axis) {
  Ops o{c};
  const Attrs along = Attrs::of(std::vector<int64_t>{axis}, true);
  const uint32_t shifted = o.e(OpId::k_sub, {x, c.m.emit(c, OpId::k_max, {x}, along)});
  const uint32_t ex = o.e(OpId::k_exp, {shifted});
  return o.e(OpId::k_div, {ex, c.m.emit(c, OpId::k_sum, {ex}, along)});
}

void narrow_bfloat16(NodeCtx& c, std::vector<uint32_t>& outs) {
  for (uint32_t& out : outs)
    if (out != kNone && c.m.dtype(out) == DType::kFloat32) out = c.m.cast_to(c, out, DType::kBFloat16);
}

void settle_carried(NodeCtx& c, std::vector<uint32_t>& outs) {
  const Carried* t = nullptr;
  for (uint32_t id : c.in)
    if ((t = carried_of(c.m, id))) break;
  if (!t) return;
  const std::string& op = c.node.op_type();
  if (typing_ops().count(op) || native_results().count(op)) return;
  const bool moves = moving_ops().count(op) > 0;
  if (!moves && !(t->bits && wrapping_ops().count(op)))
    c.unsupported(op + " on " + t->name + " values (Spore carries " + t->name + " in " + dtype_name(t->carrier) +
                  (t->bits ? "; it maps integer arithmetic, comparisons, casts and layout ops on it)" : "; it maps casts, (de)quantization and layout ops on it)"));
  if (t->bits == 32 && (op == "Mul" || op == "Pow" || op == "ReduceProd"))
    c.unsupported(op + " on uint32 values (their products need 64 unsigned bits; Spore carries uint32 in int64)");
  for (uint32_t& out : outs) {
    if (out == kNone || c.m.dtype(out) != t->carrier) continue;
    if (moves) {
      if (c.m.carried.count(out) && c.m.carried[out] != t->onnx) c.bad("a value would carry two element types");
      c.m.carried[out] = t->onnx;
    } else {
      out = wrap_to_carried(c, out, *t);
    }
  }
}

}  // namespace spore::onnx::detail
