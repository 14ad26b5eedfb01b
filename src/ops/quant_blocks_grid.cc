// Reference dequantisation of ggml's grid types (the i-quants IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS,
// IQ2_S, IQ3_XXS, IQ3_S): each 32-value group read by ops/quant_grids.h as small signed integers
// times a scale per 16, the same reading the matmul_q kernels use (NOTE [Quantization types]).
// Read only: their quantisers need an importance matrix (llama.cpp's imatrix), not Spore's job.
#include "ops/quant_blocks.h"
#include "ops/quant_grids.h"

namespace spore::quant {

namespace {

template <void (*Group)(const uint8_t*, int, int8_t*, float*)>
void dequantize_grid(const uint8_t* b, float* y) {
  int8_t v[32];
  float scale[2];
  for (int j = 0; j < 8; ++j) {
    Group(b, j, v, scale);
    for (int e = 0; e < 32; ++e) y[32 * j + e] = scale[e / 16] * (float)v[e];
  }
}

}  // namespace

void dequantize_iq2_xxs(const uint8_t* b, float* y) { dequantize_grid<iq2_xxs_group>(b, y); }
void dequantize_iq2_xs(const uint8_t* b, float* y) { dequantize_grid<iq2_xs_group>(b, y); }
void dequantize_iq2_s(const uint8_t* b, float* y) { dequantize_grid<iq2_s_group>(b, y); }
void dequantize_iq3_xxs(const uint8_t* b, float* y) { dequantize_grid<iq3_xxs_group>(b, y); }
void dequantize_iq3_s(const uint8_t* b, float* y) { dequantize_grid<iq3_s_group>(b, y); }
void dequantize_iq1_s(const uint8_t* b, float* y) { dequantize_grid<iq1_s_group>(b, y); }
void dequantize_iq1_m(const uint8_t* b, float* y) { dequantize_grid<iq1_m_group>(b, y); }

}  // namespace spore::quant
