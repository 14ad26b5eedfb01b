// Internal: the reference block conversions of every quantization type, one function per type
// and direction, which the one table (quant_types.cc) points at (NOTE [Quantization types]).
// Scalar and plain: the backends' matmul_q kernels are checked against these, and these against
// float64 arithmetic and gguf-py's dequantisers in the tests.
#pragma once
#include <cstdint>
#include <cstring>

#include "spore/half.h"

namespace spore::quant {

inline float f16_at(const uint8_t* p) {
  uint16_t b;
  std::memcpy(&b, p, 2);
  return half_bits_to_float(b);
}
inline void put_f16(uint8_t* p, float v) {
  const uint16_t b = float_to_half_bits(v);
  std::memcpy(p, &b, 2);
}

// Plain types (one value per "block").
void dequantize_f32(const uint8_t* b, float* y);
void dequantize_f16(const uint8_t* b, float* y);
void dequantize_bf16(const uint8_t* b, float* y);
void dequantize_f64(const uint8_t* b, float* y);
void quantize_f32(const float* x, uint8_t* b);
void quantize_f16(const float* x, uint8_t* b);
void quantize_bf16(const float* x, uint8_t* b);

// Blocks of 32 (quant_blocks.cc).
void dequantize_q4_0(const uint8_t* b, float* y);
void dequantize_q4_1(const uint8_t* b, float* y);
void dequantize_q5_0(const uint8_t* b, float* y);
void dequantize_q5_1(const uint8_t* b, float* y);
void dequantize_q8_0(const uint8_t* b, float* y);
void dequantize_q8_1(const uint8_t* b, float* y);
void quantize_q4_0(const float* x, uint8_t* b);
void quantize_q4_1(const float* x, uint8_t* b);
void quantize_q5_0(const float* x, uint8_t* b);
void quantize_q8_0(const float* x, uint8_t* b);

// k-quants, blocks of 256 (quant_blocks_k.cc).
void dequantize_q2_k(const uint8_t* b, float* y);
void dequantize_q3_k(const uint8_t* b, float* y);
void dequantize_q4_k(const uint8_t* b, float* y);
void dequantize_q5_k(const uint8_t* b, float* y);
void dequantize_q6_k(const uint8_t* b, float* y);
void dequantize_q8_k(const uint8_t* b, float* y);
void quantize_q4_k(const float* x, uint8_t* b);
void quantize_q6_k(const float* x, uint8_t* b);

// Table-valued and ternary types (quant_blocks_iq.cc).
void dequantize_iq4_nl(const uint8_t* b, float* y);
void dequantize_iq4_xs(const uint8_t* b, float* y);
void dequantize_tq1_0(const uint8_t* b, float* y);
void dequantize_tq2_0(const uint8_t* b, float* y);
void dequantize_mxfp4(const uint8_t* b, float* y);
void dequantize_nvfp4(const uint8_t* b, float* y);
void dequantize_q1_0(const uint8_t* b, float* y);
void dequantize_q2_0(const uint8_t* b, float* y);

// Grid types (quant_blocks_grid.cc), codebooks in quant_grids.h.
void dequantize_iq2_xxs(const uint8_t* b, float* y);
void dequantize_iq2_xs(const uint8_t* b, float* y);
void dequantize_iq2_s(const uint8_t* b, float* y);
void dequantize_iq3_xxs(const uint8_t* b, float* y);
void dequantize_iq3_s(const uint8_t* b, float* y);
void dequantize_iq1_s(const uint8_t* b, float* y);
void dequantize_iq1_m(const uint8_t* b, float* y);

}  // namespace spore::quant
