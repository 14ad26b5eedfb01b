// Creation ops: fill, arange, random_uniform, random_normal. They take no tensor inputs; the
// dispatcher puts their output on the context's default device (Inference.device), and the API
// moves it when a caller names another device (src/ops/creation_api.cc).
//
// Every value an attribute can carry is checked here, so the kernels convert without undefined
// behaviour: integers that do not fit the dtype, NaN sizes, zero steps, empty ranges are kValue
// errors before anything is allocated.
#include <cmath>
#include <cstdio>
#include <string>

#include "creation_values.h"
#include "op_families.h"

namespace spore::ops {

namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

Shape shape_attr(const OpDef& def, const std::vector<int64_t>& dims) {
  if (dims.size() > (size_t)kMaxDims)
    op_error(def, ErrorCode::kShape, "shape has " + std::to_string(dims.size()) +
                                         " dimensions; a tensor has at most " + std::to_string(kMaxDims));
  for (int64_t d : dims)
    if (d < 0) op_error(def, ErrorCode::kValue, "shape sizes must be >= 0, got " + std::to_string(d));
  return Shape(dims);
}

// Integer and bool outputs need every produced value to convert exactly (no UB on overflow).
void check_value_fits(const OpDef& def, double v, DType t, const char* what) {
  bool ok = true;
  visit_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) ok = fits_integer<T>(v);
  });
  if (!ok)
    op_error(def, ErrorCode::kValue, std::string(what) + " " + num(v) + " does not fit dtype " +
                                         dtype_name(t));
}

void check_finite(const OpDef& def, double v, const char* what) {
  if (!std::isfinite(v)) op_error(def, ErrorCode::kValue, std::string(what) + " must be finite, got " + num(v));
}

void check_floating(const OpDef& def, DType t) {
  if (!is_floating(t))
    op_error(def, ErrorCode::kDType, std::string("dtype ") + dtype_name(t) +
                                         " is not supported; random values come in float16, bfloat16, "
                                         "float32 or float64 (cast the result for integers)");
}

// fill(shape, value, dtype): every element is `value` converted like cast().
void infer_fill(const InferArgs& a, Inference& out) {
  const DType t = a.attrs.dtype(2);
  Shape s = shape_attr(a.def, a.attrs.ints(0));
  check_value_fits(a.def, a.attrs.f(1), t, "value");
  out.outputs[0] = {s, t};
  out.compute = t;
}

// arange(start, end, step, dtype): start + i * step for i < ceil((end - start) / step), computed
// in float64 and converted like cast() (integers truncate toward zero).
void infer_arange(const InferArgs& a, Inference& out) {
  const double start = a.attrs.f(0), end = a.attrs.f(1), step = a.attrs.f(2);
  const DType t = a.attrs.dtype(3);
  check_finite(a.def, start, "start");
  check_finite(a.def, end, "end");
  check_finite(a.def, step, "step");
  if (step == 0) op_error(a.def, ErrorCode::kValue, "step must not be 0");
  if (t == DType::kBool) op_error(a.def, ErrorCode::kDType, "dtype bool is not supported; use an integer or floating dtype");
  const double len = std::ceil((end - start) / step);
  if (!(len < 0x1p53))
    op_error(a.def, ErrorCode::kValue, "[" + num(start) + ", " + num(end) + ") with step " + num(step) +
                                           " has too many elements (" + num(len) + ")");
  const int64_t n = len > 0 ? (int64_t)len : 0;
  if (n > 0) {
    check_value_fits(a.def, start, t, "start");
    check_value_fits(a.def, start + (double)(n - 1) * step, t, "the last value");
  }
  out.outputs[0] = {Shape{n}, t};
  out.compute = t;
}

// random_uniform(shape, seed, low, high, dtype): values in [low, high), never high.
void infer_random_uniform(const InferArgs& a, Inference& out) {
  const DType t = a.attrs.dtype(4);
  Shape s = shape_attr(a.def, a.attrs.ints(0));
  check_floating(a.def, t);
  const double low = a.attrs.f(2), high = a.attrs.f(3);
  check_finite(a.def, low, "low");
  check_finite(a.def, high, "high");
  if (!(low < high)) op_error(a.def, ErrorCode::kValue, "low (" + num(low) + ") must be < high (" + num(high) + ")");
  check_finite(a.def, high - low, "high - low");
  bool empty = false;
  visit_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_integral_v<T>) {
      T lo, hi;
      uniform_bounds(low, high, lo, hi);
      empty = (double)lo > (double)hi;
    }
  });
  if (empty)
    op_error(a.def, ErrorCode::kValue, std::string("no ") + dtype_name(t) + " value lies in [" + num(low) +
                                           ", " + num(high) + "); widen the range or use a wider dtype");
  out.outputs[0] = {s, t};
  out.compute = t;
}

// random_normal(shape, seed, mean, stddev, dtype): Box-Muller on pairs of uniforms.
void infer_random_normal(const InferArgs& a, Inference& out) {
  const DType t = a.attrs.dtype(4);
  Shape s = shape_attr(a.def, a.attrs.ints(0));
  check_floating(a.def, t);
  check_finite(a.def, a.attrs.f(2), "mean");
  check_finite(a.def, a.attrs.f(3), "stddev");
  if (a.attrs.f(3) < 0) op_error(a.def, ErrorCode::kValue, "stddev must be >= 0, got " + num(a.attrs.f(3)));
  out.outputs[0] = {s, t};
  out.compute = t;
}

}  // namespace

void define_creation_ops(OpTable& table) {
  OpDef& fill = define(table, OpId::k_fill, 0,
                       {{"shape", AttrKind::kInts}, {"value", AttrKind::kFloat}, {"dtype", AttrKind::kDType}});
  fill.facts = not_elementwise();
  fill.infer = infer_fill;

  OpDef& arange = define(table, OpId::k_arange, 0,
                         {{"start", AttrKind::kFloat}, {"end", AttrKind::kFloat}, {"step", AttrKind::kFloat},
                          {"dtype", AttrKind::kDType}});
  arange.facts = not_elementwise();
  arange.infer = infer_arange;

  OpDef& uniform = define(table, OpId::k_random_uniform, 0,
                          {{"shape", AttrKind::kInts}, {"seed", AttrKind::kInt}, {"low", AttrKind::kFloat},
                           {"high", AttrKind::kFloat}, {"dtype", AttrKind::kDType}});
  uniform.facts = not_elementwise();
  uniform.infer = infer_random_uniform;

  OpDef& normal = define(table, OpId::k_random_normal, 0,
                         {{"shape", AttrKind::kInts}, {"seed", AttrKind::kInt}, {"mean", AttrKind::kFloat},
                          {"stddev", AttrKind::kFloat}, {"dtype", AttrKind::kDType}});
  normal.facts = not_elementwise();
  normal.infer = infer_random_normal;
  // No inputs, so nothing to differentiate.
  for (OpDef* d : {&fill, &arange, &uniform, &normal}) d->differentiable = false;
}

}  // namespace spore::ops
