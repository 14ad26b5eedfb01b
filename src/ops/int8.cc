// dynamic_quant_matmul (NOTE [Dynamic int8 products]) and integer_matmul (NOTE [Integer
// products]): the ops' definitions, and the quantization rules dynamic_quant_matmul and
// `spore lite quantize` share. Backends register the kernels (NOTE [Backends]).
#include <cmath>

#include "describe.h"
#include "op_families.h"
#include "spore/error.h"
#include "spore/int8.h"
#include "spore/ops.h"

namespace spore {

DynamicQuantParams dynamic_quant_params(float lo, float hi) {
  if (!std::isfinite(lo) || !std::isfinite(hi))
    throw Error(ErrorCode::kValue, "dynamic int8 quantization: the values' range [" + std::to_string(lo) + ", " +
                                       std::to_string(hi) + "] is not finite (a NaN or an infinity in the input)");
  const float a = std::min(lo, 0.0f), b = std::max(hi, 0.0f);
  DynamicQuantParams p;
  p.scale = (b - a) / 255.0f;
  if (p.scale == 0) return p;
  const float zp = std::nearbyint(-a / p.scale);  // the default rounding mode: half to even
  p.zero_point = (uint8_t)std::clamp(zp, 0.0f, 255.0f);
  return p;
}

uint8_t dynamic_quantize(float x, const DynamicQuantParams& p) {
  if (p.scale == 0) return p.zero_point;
  const float q = std::nearbyint(x / p.scale) + (float)p.zero_point;
  return (uint8_t)std::clamp(q, 0.0f, 255.0f);
}

Int8Weight quantize_weight_per_column(const Tensor& w) {
  if (w.ndim() != 2 || !is_floating(w.dtype()))
    throw Error(ErrorCode::kShape, "quantize_weight_per_column: the weight must be a floating-point [k, n] matrix, got " +
                                       w.shape().str() + " " + dtype_name(w.dtype()));
  const Tensor f = w.to(DType::kFloat32).contiguous();
  const int64_t k = w.shape()[0], n = w.shape()[1];
  const float* src = f.data<float>();
  std::vector<float> scale((size_t)n, 0.0f);
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const float v = src[i * n + j];
      if (!std::isfinite(v))
        throw Error(ErrorCode::kValue, "quantize_weight_per_column: element [" + std::to_string(i) + ", " +
                                           std::to_string(j) + "] is not finite");
      scale[(size_t)j] = std::max(scale[(size_t)j], std::fabs(v));
    }
  for (float& s : scale) s = s == 0 ? 1.0f : s / 127.0f;
  std::vector<int8_t> q((size_t)(k * n));
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < n; ++j)
      q[(size_t)(i * n + j)] = (int8_t)std::clamp(std::nearbyint(src[i * n + j] / scale[(size_t)j]), -127.0f, 127.0f);
  return {Tensor::from_vector<int8_t>(q, Shape{k, n}), Tensor::from_vector<float>(scale, Shape{n})};
}

Tensor dynamic_quant_matmul(const Tensor& x, const Tensor& w, const Tensor& w_scale) {
  return dispatch1(OpId::k_dynamic_quant_matmul, {x, w, w_scale});
}

Tensor integer_matmul(const Tensor& a, const Tensor& a_zero_point, const Tensor& w, const Tensor& w_offset) {
  return dispatch1(OpId::k_integer_matmul, {a, a_zero_point, w, w_offset});
}

}  // namespace spore

namespace spore::ops {

namespace {

void infer_dynamic_quant_matmul(const InferArgs& a, Inference& out) {
  const Tensor &x = a.inputs[0], &w = a.inputs[1], &s = a.inputs[2];
  if (x.dtype() != DType::kFloat32 || x.ndim() != 2)
    op_error(a.def, ErrorCode::kDType, "x must be float32 [m, k], got " + describe(x));
  if (w.dtype() != DType::kInt8 || w.ndim() != 2)
    op_error(a.def, ErrorCode::kDType, "the weight must be int8 [k, n], got " + describe(w));
  if (w.shape()[0] != x.shape()[1])
    op_error(a.def, ErrorCode::kShape, "x " + describe(x) + " does not take the weight " + describe(w) + " (k differs)");
  if (s.dtype() != DType::kFloat32 || s.ndim() != 1 || (s.shape()[0] != w.shape()[1] && s.shape()[0] != 1))
    op_error(a.def, ErrorCode::kShape,
             "the weight scale must be float32 [n] (n = " + std::to_string(w.shape()[1]) + ") or [1], got " + describe(s));
  out.outputs[0] = {Shape{x.shape()[0], w.shape()[1]}, DType::kFloat32};
  out.compute = DType::kFloat32;
}

void infer_integer_matmul(const InferArgs& a, Inference& out) {
  const Tensor &x = a.inputs[0], &zp = a.inputs[1], &w = a.inputs[2], &off = a.inputs[3];
  if (x.dtype() != DType::kUInt8 || x.ndim() != 2)
    op_error(a.def, ErrorCode::kDType, "a must be uint8 [m, k], got " + describe(x));
  if (zp.dtype() != DType::kInt32 || zp.ndim() != 0)
    op_error(a.def, ErrorCode::kDType, "a's zero point must be an int32 scalar, got " + describe(zp));
  if (w.dtype() != DType::kInt8 || w.ndim() != 2)
    op_error(a.def, ErrorCode::kDType, "the weight must be int8 [k, n], got " + describe(w));
  if (w.shape()[0] != x.shape()[1])
    op_error(a.def, ErrorCode::kShape, "a " + describe(x) + " does not take the weight " + describe(w) + " (k differs)");
  if (x.shape()[1] > kIntegerMatmulMaxK)
    op_error(a.def, ErrorCode::kShape, "k = " + std::to_string(x.shape()[1]) + " is over " + std::to_string(kIntegerMatmulMaxK) +
                                           ", past which a sum can leave int32");
  if (off.dtype() != DType::kInt32 || off.ndim() != 1 || (off.shape()[0] != w.shape()[1] && off.shape()[0] != 1))
    op_error(a.def, ErrorCode::kShape,
             "the weight offset must be int32 [n] (n = " + std::to_string(w.shape()[1]) + ") or [1], got " + describe(off));
  out.outputs[0] = {Shape{x.shape()[0], w.shape()[1]}, DType::kInt32};
  out.compute = DType::kInt32;
}

}  // namespace

void define_int8_ops(OpTable& table) {
  OpDef& d = define(table, OpId::k_dynamic_quant_matmul, 3);
  d.facts = not_elementwise();
  d.infer = infer_dynamic_quant_matmul;
  d.differentiable = false;  // an inference op: its weight is frozen, x's rounding has no gradient
  OpDef& i = define(table, OpId::k_integer_matmul, 4);
  i.facts = not_elementwise();
  i.infer = infer_integer_matmul;
  i.differentiable = false;  // integers
}

}  // namespace spore::ops
