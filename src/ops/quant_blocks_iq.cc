// Reference conversions of the table-valued types (iq4_nl, iq4_xs, mxfp4, nvfp4), the ternary ones
// (tq1_0, tq2_0) and the 1- and 2-bit ones (q1_0, q2_0); layouts in include/spore/quant.h, NOTE [Quantization types]. Read only: their
// quantisers (importance-weighted searches in llama.cpp) are not Spore's.
#include <cmath>

#include "ops/quant_blocks.h"
#include "spore/quant.h"

namespace spore {

float mxfp4_scale(uint8_t e) { return std::ldexp(1.f, (int)e - 128); }

float nvfp4_scale(uint8_t e) {
  if (e == 0 || e == 0x7F) return 0.f;
  const int exp = (e >> 3) & 0xF, man = e & 7;
  const float raw = exp == 0 ? std::ldexp((float)man, -9) : std::ldexp(1.f + (float)man / 8.f, exp - 7);
  return raw * 0.5f;
}

}  // namespace spore

namespace spore::quant {

void dequantize_iq4_nl(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  for (int j = 0; j < 16; ++j) {
    y[j] = d * (float)kIq4nlValues[b[2 + j] & 0xF];
    y[j + 16] = d * (float)kIq4nlValues[b[2 + j] >> 4];
  }
}

void dequantize_iq4_xs(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  for (int j = 0; j < 8; ++j) {
    const float dl = d * (float)(iq4xs_scale(b, j) - 32);
    const uint8_t* qs = b + 8 + 16 * j;
    for (int l = 0; l < 16; ++l) {
      y[32 * j + l] = dl * (float)kIq4nlValues[qs[l] & 0xF];
      y[32 * j + l + 16] = dl * (float)kIq4nlValues[qs[l] >> 4];
    }
  }
}

void dequantize_tq1_0(const uint8_t* b, float* y) {
  const float d = f16_at(b + 52);
  for (int e = 0; e < 256; ++e) y[e] = d * (float)(tq1_digit(b, e) - 1);
}

// Group j of 32 (0..7): bits 2 (j % 4) of qs[32 (j / 4) + l].
void dequantize_tq2_0(const uint8_t* b, float* y) {
  const float d = f16_at(b + 64);
  for (int j = 0; j < 8; ++j)
    for (int l = 0; l < 32; ++l) y[32 * j + l] = d * (float)(((b[32 * (j / 4) + l] >> (2 * (j % 4))) & 3) - 1);
}

void dequantize_mxfp4(const uint8_t* b, float* y) {
  const float d = mxfp4_scale(b[0]);
  for (int j = 0; j < 16; ++j) {
    y[j] = d * (float)kMxfp4Values[b[1 + j] & 0xF];
    y[j + 16] = d * (float)kMxfp4Values[b[1 + j] >> 4];
  }
}

void dequantize_nvfp4(const uint8_t* b, float* y) {
  for (int s = 0; s < 4; ++s) {
    const float d = nvfp4_scale(b[s]);
    const uint8_t* qs = b + 4 + 8 * s;
    for (int j = 0; j < 8; ++j) {
      y[16 * s + j] = d * (float)kMxfp4Values[qs[j] & 0xF];
      y[16 * s + j + 8] = d * (float)kMxfp4Values[qs[j] >> 4];
    }
  }
}

void dequantize_q1_0(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  for (int j = 0; j < 128; ++j) y[j] = (b[2 + j / 8] >> (j % 8)) & 1 ? d : -d;
}

void dequantize_q2_0(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  for (int j = 0; j < 64; ++j) y[j] = d * (float)(((b[2 + j / 4] >> (2 * (j % 4))) & 3) - 1);
}

}  // namespace spore::quant
