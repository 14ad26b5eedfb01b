// Dynamic int8 quantization (NOTE [Dynamic int8 products] in docs/design.md): float32 activations
// quantized per tensor at run time to uint8, as ONNX's DynamicQuantizeLinear defines it, times
// int8 weights quantized once, symmetrically, per output column. The op is ONNX Runtime's
// com.microsoft DynamicQuantizeMatMul (with a symmetric weight), which `spore lite quantize`
// writes and Lite reads.
#pragma once
#include <cstdint>

#include "spore/tensor.h"

namespace spore {

// ONNX DynamicQuantizeLinear's parameters for values in [lo, hi]: the range is widened to hold 0,
// scale = (max(hi, 0) - min(lo, 0)) / 255 and zero_point = saturate(round(-min(lo, 0) / scale)),
// both in float32, rounding half to even. An all-zero range gives scale 0 and zero point 0 (every
// value quantizes to 0); a range with a NaN or an infinity is a kValue error.
struct DynamicQuantParams {
  float scale = 0;
  uint8_t zero_point = 0;
};
DynamicQuantParams dynamic_quant_params(float lo, float hi);
// saturate(round_half_even(x / scale) + zero_point) into [0, 255]; 0 -> zero_point when scale is 0.
uint8_t dynamic_quantize(float x, const DynamicQuantParams& p);

// A float32 weight [k, n] as int8 [k, n] and float32 scales [n]: column j's scale is
// max_i |w[i, j]| / 127 (1 for an all-zero column) and w_q = round_half_even(w / scale), so every
// value lands in [-127, 127] and the weight's zero point is 0.
struct Int8Weight {
  Tensor q, scale;
};
Int8Weight quantize_weight_per_column(const Tensor& w);

// y[i, j] = (x_scale * w_scale[j]) * sum_k (xq[i, k] - x_zero_point) * w[k, j], with xq, x_scale
// and x_zero_point from dynamic_quantize over all of x. x: float32 [m, k]; w: int8 [k, n];
// w_scale: float32 [n] (or [1], one scale for every column). Exact integer sums; the one float
// rounding is the product with the scale (x_scale * w_scale[j] rounded to float32 first).
Tensor dynamic_quant_matmul(const Tensor& x, const Tensor& w, const Tensor& w_scale);

// The maximum k of integer_matmul: every partial sum then fits in int32.
inline constexpr int64_t kIntegerMatmulMaxK = 32768;

// y[i, j] = sum_k (a[i, k] - a_zero_point) * (w[k, j] + w_offset[j]), exactly, as int32: ONNX's
// MatMulInteger with the weight's zero point folded in (NOTE [Integer products]). a: uint8 [m, k];
// a_zero_point: int32 [] in [0, 255]; w: int8 [k, n]; w_offset: int32 [n] (or [1]) in
// [-128, 128]; k <= kIntegerMatmulMaxK: then |a - zp| <= 255 and |w + offset| <= 256, so no sum
// can leave int32 (255 * 256 * 32768 < 2^31).
Tensor integer_matmul(const Tensor& a, const Tensor& a_zero_point, const Tensor& w, const Tensor& w_offset);

}  // namespace spore
