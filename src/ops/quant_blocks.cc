// Reference conversions of the plain types and the 32-value block types (quant_blocks.h,
// NOTE [Quantization types]). The quantisers are Spore's own (NOTE [GGUF writer]); their output
// is what tools/make_convert_fixtures.py hashed, so a change here means rerunning it.
#include <algorithm>
#include <cmath>

#include "ops/quant_blocks.h"

namespace spore::quant {

namespace {

// Round to nearest, ties away from zero, clamped to [lo, hi].
int qround(float v, int lo, int hi) { return std::clamp((int)std::lround(v), lo, hi); }

// The fifth bit of element j of a q5_0 / q5_1 block, from its 32-bit qh (bit j for element j).
int fifth_bit(const uint8_t* qh, int j) { return (qh[j / 8] >> (j % 8)) & 1; }

}  // namespace

void dequantize_f32(const uint8_t* b, float* y) { std::memcpy(y, b, 4); }
void dequantize_f16(const uint8_t* b, float* y) { *y = f16_at(b); }
void dequantize_bf16(const uint8_t* b, float* y) {
  uint16_t v;
  std::memcpy(&v, b, 2);
  *y = bf16_bits_to_float(v);
}
void dequantize_f64(const uint8_t* b, float* y) {
  double v;
  std::memcpy(&v, b, 8);
  *y = (float)v;
}
void quantize_f32(const float* x, uint8_t* b) { std::memcpy(b, x, 4); }
void quantize_f16(const float* x, uint8_t* b) { put_f16(b, *x); }
void quantize_bf16(const float* x, uint8_t* b) {
  const uint16_t v = float_to_bf16_bits(*x);
  std::memcpy(b, &v, 2);
}

void dequantize_q4_0(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  for (int j = 0; j < 16; ++j) {
    y[j] = d * (float)((b[2 + j] & 0xF) - 8);
    y[j + 16] = d * (float)((b[2 + j] >> 4) - 8);
  }
}

void dequantize_q4_1(const uint8_t* b, float* y) {
  const float d = f16_at(b), m = f16_at(b + 2);
  for (int j = 0; j < 16; ++j) {
    y[j] = d * (float)(b[4 + j] & 0xF) + m;
    y[j + 16] = d * (float)(b[4 + j] >> 4) + m;
  }
}

void dequantize_q5_0(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  const uint8_t *qh = b + 2, *qs = b + 6;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * (float)(((qs[j] & 0xF) | fifth_bit(qh, j) << 4) - 16);
    y[j + 16] = d * (float)(((qs[j] >> 4) | fifth_bit(qh, j + 16) << 4) - 16);
  }
}

void dequantize_q5_1(const uint8_t* b, float* y) {
  const float d = f16_at(b), m = f16_at(b + 2);
  const uint8_t *qh = b + 4, *qs = b + 8;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * (float)((qs[j] & 0xF) | fifth_bit(qh, j) << 4) + m;
    y[j + 16] = d * (float)((qs[j] >> 4) | fifth_bit(qh, j + 16) << 4) + m;
  }
}

void dequantize_q8_0(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  for (int j = 0; j < 32; ++j) y[j] = d * (float)(int8_t)b[2 + j];
}

void dequantize_q8_1(const uint8_t* b, float* y) {  // f16 d, f16 s (the sum, unused here), q[32]
  const float d = f16_at(b);
  for (int j = 0; j < 32; ++j) y[j] = d * (float)(int8_t)b[4 + j];
}

void quantize_q8_0(const float* x, uint8_t* b) {
  float amax = 0;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  put_f16(b, amax / 127.f);
  const float d = f16_at(b), id = d != 0 ? 1.f / d : 0.f;  // against the scale a reader sees
  for (int j = 0; j < 32; ++j) b[2 + j] = (uint8_t)(int8_t)qround(x[j] * id, -127, 127);
}

void quantize_q4_0(const float* x, uint8_t* b) {
  // The value of largest magnitude maps to -8 so that all 16 levels are used.
  float ext = 0;
  for (int j = 0; j < 32; ++j)
    if (std::fabs(x[j]) > std::fabs(ext)) ext = x[j];
  put_f16(b, ext / -8.f);
  const float d = f16_at(b), id = d != 0 ? 1.f / d : 0.f;
  for (int j = 0; j < 16; ++j) {
    const int lo = qround(x[j] * id + 8.f, 0, 15), hi = qround(x[j + 16] * id + 8.f, 0, 15);
    b[2 + j] = (uint8_t)(lo | (hi << 4));
  }
}

// As q4_0 with 32 levels: the extreme value maps to -16; the fifth bits go to the 32-bit qh.
void quantize_q5_0(const float* x, uint8_t* b) {
  float ext = 0;
  for (int j = 0; j < 32; ++j)
    if (std::fabs(x[j]) > std::fabs(ext)) ext = x[j];
  put_f16(b, ext / -16.f);
  const float d = f16_at(b), id = d != 0 ? 1.f / d : 0.f;
  uint8_t* qh = b + 2;
  uint8_t* qs = b + 6;
  std::memset(qh, 0, 4);
  for (int j = 0; j < 16; ++j) {
    const int lo = qround(x[j] * id + 16.f, 0, 31), hi = qround(x[j + 16] * id + 16.f, 0, 31);
    qs[j] = (uint8_t)((lo & 0xF) | ((hi & 0xF) << 4));
    qh[j / 8] |= (uint8_t)((lo >> 4) << (j % 8));
    qh[(j + 16) / 8] |= (uint8_t)((hi >> 4) << ((j + 16) % 8));
  }
}

void quantize_q4_1(const float* x, uint8_t* b) {  // affine over [min, max]
  float mn = x[0], mx = x[0];
  for (int j = 1; j < 32; ++j) mn = std::min(mn, x[j]), mx = std::max(mx, x[j]);
  put_f16(b, (mx - mn) / 15.f);
  put_f16(b + 2, mn);
  const float d = f16_at(b), id = d != 0 ? 1.f / d : 0.f;
  mn = f16_at(b + 2);
  for (int j = 0; j < 16; ++j) {
    const int lo = qround((x[j] - mn) * id, 0, 15), hi = qround((x[j + 16] - mn) * id, 0, 15);
    b[4 + j] = (uint8_t)(lo | (hi << 4));
  }
}

}  // namespace spore::quant
