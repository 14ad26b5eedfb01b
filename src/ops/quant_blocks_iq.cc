// Reference conversions of the table-valued types (iq4_nl, iq4_xs, mxfp4) and the ternary ones
// (tq1_0, tq2_0); layouts in include/spore/quant.h, NOTE [Quantization types]. Read only: their
// quantisers (importance-weighted searches in llama.cpp) are not Spore's.
#include <cmath>

#include "ops/quant_blocks.h"
#include "spore/quant.h"

namespace spore {

float mxfp4_scale(uint8_t e) { return std::ldexp(1.f, (int)e - 128); }

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

}  // namespace spore::quant
