// ONNX's trigonometric and hyperbolic ops without a registry op of their own (Tan, Sinh, Cosh,
// Asinh, Acosh, Atanh, Atan, Asin, Acos), written with registry ops in float64 and cast back to
// the input's type (NOTE [ONNX attention and losses]). Atan has no registry op: it is argument
// reduction (1/x above 1, then two half-angle steps to |u| <= tan(pi/16)) and its Taylor series,
// whose terms fall by u^2 <= 0.04 each, so 12 terms are exact to float64's rounding.
#include <cmath>

#include "lite/onnx_mapper.h"

namespace spore::onnx::detail {
namespace {

constexpr double kHalfPi = 1.57079632679489661923;

struct F64 {
  NodeCtx& c;
  uint32_t e(OpId op, std::vector<uint32_t> ins) { return c.m.emit(c, op, ins); }
  uint32_t k(double v) { return c.m.scalar(v, DType::kFloat64); }
  uint32_t add(uint32_t a, uint32_t b) { return e(OpId::k_add, {a, b}); }
  uint32_t sub(uint32_t a, uint32_t b) { return e(OpId::k_sub, {a, b}); }
  uint32_t mul(uint32_t a, uint32_t b) { return e(OpId::k_mul, {a, b}); }
  uint32_t div(uint32_t a, uint32_t b) { return e(OpId::k_div, {a, b}); }
  uint32_t sqrt(uint32_t a) { return e(OpId::k_sqrt, {a}); }
  uint32_t log(uint32_t a) { return e(OpId::k_log, {a}); }
  uint32_t exp(uint32_t a) { return e(OpId::k_exp, {a}); }
  // -1, 0 or 1 times a: x's sign carried over to a function of |x| (odd functions).
  uint32_t odd(uint32_t x, uint32_t of_abs) { return e(OpId::k_where, {e(OpId::k_lt, {x, k(0)}), e(OpId::k_neg, {of_abs}), of_abs}); }
  // atan(u) = 2 atan(u / (1 + sqrt(1 + u^2)))
  uint32_t half_angle(uint32_t u) { return div(u, add(k(1), sqrt(add(k(1), mul(u, u))))); }
  uint32_t atan(uint32_t x) {
    const uint32_t a = e(OpId::k_abs, {x});
    const uint32_t big = e(OpId::k_gt, {a, k(1)});
    const uint32_t r = e(OpId::k_where, {big, div(k(1), a), a});  // in [0, 1]
    const uint32_t u = half_angle(half_angle(r));                  // in [0, tan(pi/16)]
    const uint32_t u2 = mul(u, u);
    uint32_t series = k(-1.0 / 23);  // Horner over sum (-1)^n u^(2n+1) / (2n+1), n < 12
    for (int n = 10; n >= 0; --n) series = add(k((n % 2 ? -1.0 : 1.0) / (2 * n + 1)), mul(u2, series));
    const uint32_t at_r = mul(k(4), mul(u, series));
    return odd(x, e(OpId::k_where, {big, sub(k(kHalfPi), at_r), at_r}));
  }
};

Handler trig(const std::string& op) {
  return [op](NodeCtx& c) {
    const uint32_t in = c.at(0);
    const DType t = c.m.dtype(in);
    if (!is_floating(t)) c.bad(op + " takes a floating-point input");
    F64 f{c};
    const uint32_t x = c.m.cast_to(c, in, DType::kFloat64);
    uint32_t y;
    if (op == "Tan") y = f.div(f.e(OpId::k_sin, {x}), f.e(OpId::k_cos, {x}));
    else if (op == "Sinh") y = f.mul(f.k(0.5), f.sub(f.exp(x), f.exp(f.e(OpId::k_neg, {x}))));
    else if (op == "Cosh") y = f.mul(f.k(0.5), f.add(f.exp(x), f.exp(f.e(OpId::k_neg, {x}))));
    else if (op == "Asinh") {
      const uint32_t a = f.e(OpId::k_abs, {x});
      y = f.odd(x, f.log(f.add(a, f.sqrt(f.add(f.mul(a, a), f.k(1))))));
    } else if (op == "Acosh") y = f.log(f.add(x, f.sqrt(f.sub(f.mul(x, x), f.k(1)))));
    else if (op == "Atanh") y = f.mul(f.k(0.5), f.log(f.div(f.add(f.k(1), x), f.sub(f.k(1), x))));
    else if (op == "Atan") y = f.atan(x);
    else if (op == "Asin") y = f.atan(f.div(x, f.sqrt(f.sub(f.k(1), f.mul(x, x)))));  // +-1 -> +-inf -> +-pi/2
    else y = f.mul(f.k(2), f.atan(f.sqrt(f.div(f.sub(f.k(1), x), f.add(f.k(1), x)))));  // Acos; -1 -> pi
    return std::vector<uint32_t>{c.m.cast_to(c, y, t)};
  };
}

}  // namespace

void add_trig_ops(HandlerTable& t) {
  for (const char* op : {"Tan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Atan", "Asin", "Acos"}) t[op] = trig(op);
}

}  // namespace spore::onnx::detail
