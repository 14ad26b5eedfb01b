// ONNX's BitwiseAnd / Or / Xor / Not and BitShift written with registry ops (NOTE [ONNX
// attention and losses]). The registry has no bit operations; for integer types up to 32 bits
// every step is exact in float64: a value is read as its unsigned W-bit pattern (x + 2^W when
// negative), a bit is floor(q / 2) halving, a shift a multiplication or floor division by 2^y
// (powers of two scale exactly), and the result wrapped modulo 2^W and read back as signed.
// 64-bit integers would need 64 exact bits, more than float64 holds: refused (kUnsupported).
// BitwiseNot is -x - 1 (two's complement) or max - x (unsigned), exact in any integer type.
// BitCast (op set 26) reinterprets the bytes of a value known when the graph is mapped (a
// constant, or predict's inputs; a computed tensor is refused by name): the registry has no
// reinterpreting op.
#include <cmath>
#include <cstring>

#include "lite/onnx_mapper.h"

namespace spore::onnx::detail {
namespace {

struct Bits {
  NodeCtx& c;
  DType t;
  int width = 0;
  bool is_signed = false;

  // A carried integer type (NOTE [ONNX carried types]) sets the width; its carrier is `type`.
  Bits(NodeCtx& ctx, DType type, bool allow64, const Carried* carried = nullptr) : c(ctx), t(type) {
    if (carried && carried->bits) {
      width = carried->bits, is_signed = carried->is_signed;
      return;
    }
    switch (t) {
      case DType::kInt8: width = 8, is_signed = true; break;
      case DType::kUInt8: width = 8; break;
      case DType::kInt32: width = 32, is_signed = true; break;
      case DType::kInt64: width = 64, is_signed = true; break;
      default: c.bad(c.node.op_type() + " takes integer inputs, not " + dtype_name(t));
    }
    if (width == 64 && !allow64) c.unsupported(c.node.op_type() + " of 64-bit integers (exact only to 53 bits in float64)");
  }
  uint32_t e(OpId op, std::vector<uint32_t> ins) { return c.m.emit(c, op, ins); }
  uint32_t k(double v) { return c.m.scalar(v, DType::kFloat64); }
  uint32_t floor(uint32_t x) {  // |x| < 2^53 here
    const uint32_t whole = c.m.cast_to(c, c.m.cast_to(c, x, DType::kInt64), DType::kFloat64);
    return e(OpId::k_sub, {whole, c.m.cast_to(c, e(OpId::k_gt, {whole, x}), DType::kFloat64)});
  }
  uint32_t f64(uint32_t x) { return c.m.cast_to(c, c.m.cast_to(c, x, t), DType::kFloat64); }
  // The unsigned W-bit pattern of x (as float64), and back.
  uint32_t pattern(uint32_t x) {
    if (!is_signed) return x;
    return e(OpId::k_where, {e(OpId::k_lt, {x, k(0)}), e(OpId::k_add, {x, k(std::ldexp(1.0, width))}), x});
  }
  uint32_t value(uint32_t u) {
    uint32_t v = e(OpId::k_sub, {u, e(OpId::k_mul, {floor(e(OpId::k_div, {u, k(std::ldexp(1.0, width))})), k(std::ldexp(1.0, width))})});
    if (is_signed) v = e(OpId::k_where, {e(OpId::k_ge, {v, k(std::ldexp(1.0, width - 1))}), e(OpId::k_sub, {v, k(std::ldexp(1.0, width))}), v});
    return c.m.cast_to(c, v, t);
  }
};

Handler bitwise(const std::string& op) {
  return [op](NodeCtx& c) {
    const DType t = c.m.dtype(c.at(0));
    if (c.m.dtype(c.at(1)) != t) c.bad(op + "'s inputs must share one type");
    const Carried* ct = carried_of(c.m, c.at(0));
    Bits b(c, t, false, ct);
    uint32_t qa = b.pattern(b.f64(c.at(0))), qb = b.pattern(b.f64(c.at(1)));
    uint32_t sum = kNone;
    for (int bit = 0; bit < b.width; ++bit) {
      const uint32_t na = b.floor(b.e(OpId::k_mul, {qa, b.k(0.5)})), nb = b.floor(b.e(OpId::k_mul, {qb, b.k(0.5)}));
      const uint32_t x = b.e(OpId::k_sub, {qa, b.e(OpId::k_mul, {na, b.k(2)})}), y = b.e(OpId::k_sub, {qb, b.e(OpId::k_mul, {nb, b.k(2)})});
      const uint32_t xy = b.e(OpId::k_mul, {x, y});
      uint32_t r;
      if (op == "BitwiseAnd") r = xy;
      else if (op == "BitwiseOr") r = b.e(OpId::k_sub, {b.e(OpId::k_add, {x, y}), xy});
      else r = b.e(OpId::k_sub, {b.e(OpId::k_add, {x, y}), b.e(OpId::k_mul, {xy, b.k(2)})});
      r = b.e(OpId::k_mul, {r, b.k(std::ldexp(1.0, bit))});
      sum = sum == kNone ? r : b.e(OpId::k_add, {sum, r});
      qa = na, qb = nb;
    }
    const uint32_t out = b.value(sum);
    if (ct) c.m.carried[out] = ct->onnx;
    return std::vector<uint32_t>{out};
  };
}

std::vector<uint32_t> bitwise_not(NodeCtx& c) {
  const uint32_t x = c.at(0);
  const Carried* ct = carried_of(c.m, x);
  Bits b(c, c.m.dtype(x), true, ct);
  const uint32_t out = b.is_signed ? c.m.emit(c, OpId::k_sub, {c.m.emit(c, OpId::k_neg, {x}), c.m.scalar(1, b.t)})
                                   : c.m.emit(c, OpId::k_sub, {c.m.scalar(std::ldexp(1.0, b.width) - 1, b.t), x});
  if (ct) c.m.carried[out] = ct->onnx;
  return {out};
}

// X shifted by Y bits; a Y below 0 or of W and more leaves only the sign fill (-1 for a right
// shift of a negative X, else 0).
std::vector<uint32_t> bit_shift(NodeCtx& c) {
  const DType t = c.m.dtype(c.at(0));
  if (c.m.dtype(c.at(1)) != t) c.bad("BitShift's inputs must share one type");
  const std::string direction = c.s("direction", "");
  if (direction != "LEFT" && direction != "RIGHT") c.bad("direction must be LEFT or RIGHT, not '" + direction + "'");
  const Carried* ct = carried_of(c.m, c.at(0));
  Bits b(c, t, false, ct);
  const uint32_t x = b.f64(c.at(0)), y = b.f64(c.at(1));
  const uint32_t in_range = b.e(OpId::k_logical_and, {b.e(OpId::k_ge, {y, b.k(0)}), b.e(OpId::k_lt, {y, b.k(b.width)})});
  const uint32_t scale = b.e(OpId::k_pow, {b.k(2), b.e(OpId::k_where, {in_range, y, b.k(0)})});
  uint32_t shifted, fill = b.k(0);
  if (direction == "LEFT") {
    shifted = b.e(OpId::k_mul, {b.pattern(x), scale});
  } else {
    shifted = b.floor(b.e(OpId::k_div, {x, scale}));  // floor division: the arithmetic shift
    if (b.is_signed) fill = b.e(OpId::k_where, {b.e(OpId::k_lt, {x, b.k(0)}), b.k(-1), b.k(0)});
  }
  const uint32_t out = b.value(b.pattern(b.e(OpId::k_where, {in_range, shifted, fill})));
  if (ct) c.m.carried[out] = ct->onnx;
  return {out};
}

}  // namespace

// BitCast from or to a carried integer type (NOTE [ONNX carried types]): between integer types of
// one width, reading the bits again is wrapping the value into the other type's range, which the
// graph computes (no data needed).
uint32_t carried_bit_cast(NodeCtx& c, uint32_t x, const Carried* from, int32_t to_type, const Carried* to) {
  auto width = [&](const Carried* ct, DType t, bool& is_signed) {
    if (ct) {
      is_signed = ct->is_signed;
      return ct->bits;
    }
    is_signed = t == DType::kInt8 || t == DType::kInt32;
    return t == DType::kInt8 || t == DType::kUInt8 ? 8 : t == DType::kInt32 ? 32 : 0;
  };
  DType to_dtype = DType::kFloat32;
  if (!to && !dtype_of(to_type, to_dtype)) c.unsupported("BitCast to " + onnx_type_name(to_type));
  bool from_signed = false, to_signed = false;
  const int from_bits = width(from, c.m.dtype(x), from_signed), to_bits = width(to, to_dtype, to_signed);
  if (!from_bits || !to_bits) c.unsupported("BitCast between " + std::string(from ? from->name : dtype_name(c.m.dtype(x))) + " and " + onnx_type_name(to_type) + " (Spore maps it between integer types)");
  if (from_bits != to_bits) c.bad("BitCast changes the element size");
  if (to) return wrap_to_carried(c, x, *to);
  const Carried native{to_type, dtype_name(to_dtype), to_dtype, to_bits, to_signed};
  const uint32_t out = wrap_to_carried(c, x, native);
  c.m.carried.erase(out);
  return out;
}

std::vector<uint32_t> bit_cast(NodeCtx& c) {
  Mapper& m = c.m;
  const Carried *from_carried = carried_of(m, c.at(0)), *to_carried = carried_type((int32_t)c.i("to", 0));
  if (from_carried || to_carried) return {carried_bit_cast(c, c.at(0), from_carried, (int32_t)c.i("to", 0), to_carried)};
  DType to;
  if (!dtype_of((int32_t)c.i("to", 0), to)) c.unsupported("BitCast to " + onnx_type_name((int32_t)c.i("to", 0)));
  const uint32_t x = c.at(0);
  if (dtype_size(to) != dtype_size(m.dtype(x)))
    c.bad(std::string("BitCast from ") + dtype_name(m.dtype(x)) + " to " + dtype_name(to) + " changes the element size");
  if (m.shape(x).numel() > kMaxKnownElements) c.unsupported("BitCast of a value over 4,096 elements (it runs when the graph is mapped)");
  const Tensor from = m.data(c, x, "input (BitCast runs when the graph is mapped)").contiguous();
  Tensor out = Tensor::empty(from.shape(), to, Device::cpu());
  if (from.nbytes()) std::memcpy(out.data_ptr(), from.data_ptr(), from.nbytes());
  if (to == DType::kBool)  // only 0 and 1 are bool values
    for (int64_t i = 0; i < out.numel(); ++i)
      if (static_cast<const uint8_t*>(out.data_ptr())[i] > 1) c.unsupported("BitCast to bool of bytes other than 0 and 1");
  return {m.constant(out)};
}

void add_bitwise_ops(HandlerTable& t) {
  t["BitCast"] = bit_cast;
  for (const char* op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor"}) t[op] = bitwise(op);
  t["BitwiseNot"] = bitwise_not;
  t["BitShift"] = bit_shift;
}

}  // namespace spore::onnx::detail
