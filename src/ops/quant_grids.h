// Internal: the i-quants' codebooks and how one 32-value group of each grid type reads as small
// signed integers times a scale (NOTE [Quantization types]). Shared by the reference dequantisers
// (quant_blocks_grid.cc) and the matmul_q kernels (the CPU backend's quant_kernels.inc), so the
// two read a block the same way. Every index is masked to its grid's 2^bits rows.
#pragma once
#include <cstdint>
#include <cstring>

#include "spore/half.h"

namespace spore::quant {

#include "ops/quant_grids_data.inc"

static_assert(sizeof(kIq2xxsGrid) == 256 * 8 && sizeof(kIq2xsGrid) == 512 * 8 && sizeof(kIq2sGrid) == 1024 * 8);
static_assert(sizeof(kIq3xxsGrid) == 256 * 4 && sizeof(kIq3sGrid) == 512 * 4 && sizeof(kIq1sGrid) == 2048 * 8);
static_assert(sizeof(kIq2SignBytes) == 128);

namespace grid_detail {
inline float f16(const uint8_t* p) {
  uint16_t b;
  std::memcpy(&b, p, 2);
  return half_bits_to_float(b);
}
inline uint16_t u16(const uint8_t* p) { return (uint16_t)(p[0] | p[1] << 8); }
inline uint32_t u32(const uint8_t* p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
// 8 grid values times the signs of sign byte `s` (bit j set: value j negative).
inline void signed8(const uint8_t* grid, uint8_t s, int8_t* v) {
  for (int j = 0; j < 8; ++j) v[j] = (int8_t)((s >> j) & 1 ? -grid[j] : grid[j]);
}
// iq2_xs / iq2_s: a scale byte holds the two 16-value halves' 4-bit scales, each d (0.5 + s) / 4.
inline void nibble_scales(float d, uint8_t s, float* scale) {
  scale[0] = d * (0.5f + (float)(s & 0xF)) * 0.25f;
  scale[1] = d * (0.5f + (float)(s >> 4)) * 0.25f;
}
}  // namespace grid_detail

// Group j (0..7) of 32 values: v[32] small signed integers and the scale of each half (16
// values; equal where the type has one scale per 32), value = scale * v, exactly as ggml's
// dequantisers form it (scale first, then times the integer). The IQ1 types' +-1/8 offset is
// folded into the integer (v = 8 * grid +- 1, scale / 8: both exact).
inline void iq2_xxs_group(const uint8_t* b, int j, int8_t* v, float* scale) {
  using namespace grid_detail;
  const uint32_t a0 = u32(b + 2 + 8 * j), a1 = u32(b + 6 + 8 * j);
  scale[0] = scale[1] = f16(b) * (0.5f + (float)(a1 >> 28)) * 0.25f;
  for (int l = 0; l < 4; ++l)
    signed8(kIq2xxsGrid + 8 * ((a0 >> (8 * l)) & 0xFF), kIq2SignBytes[(a1 >> (7 * l)) & 127], v + 8 * l);
}

inline void iq2_xs_group(const uint8_t* b, int j, int8_t* v, float* scale) {
  using namespace grid_detail;
  nibble_scales(f16(b), b[66 + j], scale);
  for (int l = 0; l < 4; ++l) {
    const uint16_t q = u16(b + 2 + 8 * j + 2 * l);
    signed8(kIq2xsGrid + 8 * (q & 511), kIq2SignBytes[q >> 9], v + 8 * l);
  }
}

// d, qs[32], signs[32], qh[8], scales[8]: index qs[4 j + l] | (qh[j] >> 2 l & 3) << 8.
inline void iq2_s_group(const uint8_t* b, int j, int8_t* v, float* scale) {
  using namespace grid_detail;
  nibble_scales(f16(b), b[74 + j], scale);
  for (int l = 0; l < 4; ++l) {
    const int idx = b[2 + 4 * j + l] | (((b[66 + j] >> (2 * l)) & 3) << 8);
    signed8(kIq2sGrid + 8 * idx, b[34 + 4 * j + l], v + 8 * l);
  }
}

// d, qs[64] (grid indices), then 8 u32: 4 x 7 sign bits and a 4-bit scale.
inline void iq3_xxs_group(const uint8_t* b, int j, int8_t* v, float* scale) {
  using namespace grid_detail;
  const uint32_t a = u32(b + 66 + 4 * j);
  scale[0] = scale[1] = f16(b) * (0.5f + (float)(a >> 28)) * 0.5f;
  for (int l = 0; l < 4; ++l) {
    const uint8_t s = kIq2SignBytes[(a >> (7 * l)) & 127];
    uint8_t g[8];
    std::memcpy(g, kIq3xxsGrid + 4 * b[2 + 8 * j + 2 * l], 4);
    std::memcpy(g + 4, kIq3xxsGrid + 4 * b[2 + 8 * j + 2 * l + 1], 4);
    signed8(g, s, v + 8 * l);
  }
}

// d, qs[64], qh[8], signs[32], scales[4]: index qs[8 j + k] | (qh[j] >> k & 1) << 8 (k = 0..7,
// 4 values each), scale d * (1 + 2 * nibble j of scales).
inline void iq3_s_group(const uint8_t* b, int j, int8_t* v, float* scale) {
  using namespace grid_detail;
  scale[0] = scale[1] = f16(b) * (float)(1 + 2 * ((b[106 + j / 2] >> (4 * (j % 2))) & 0xF));
  for (int l = 0; l < 4; ++l) {
    uint8_t g[8];
    for (int h = 0; h < 2; ++h) {
      const int k = 2 * l + h;
      const int idx = b[2 + 8 * j + k] | (((b[66 + j] >> k) & 1) << 8);
      std::memcpy(g + 4 * h, kIq3sGrid + 4 * idx, 4);
    }
    signed8(g, b[74 + 4 * j + l], v + 8 * l);
  }
}

// d, qs[32], qh u16[8]: per group qh = scale (bits 12-14), delta sign (bit 15), 3 index bits
// per row of 8; value d * (2 s + 1) * (grid +- 1/8).
inline void iq1_s_group(const uint8_t* b, int j, int8_t* v, float* scale) {
  using namespace grid_detail;
  const uint16_t qh = u16(b + 34 + 2 * j);
  scale[0] = scale[1] = f16(b) * (float)(2 * ((qh >> 12) & 7) + 1) * 0.125f;
  const int delta = qh & 0x8000 ? -1 : 1;
  for (int l = 0; l < 4; ++l) {
    const int idx = b[2 + 4 * j + l] | (((qh >> (3 * l)) & 7) << 8);
    for (int e = 0; e < 8; ++e) v[8 * l + e] = (int8_t)(8 * kIq1sGrid[8 * idx + e] + delta);
  }
}

// qs[32], qh[16], scales u16[4] (3-bit scales per 16 values; the float16 d in their top nibbles);
// row l's index qs[4 j + l] | (nibble & 7) << 8, its delta sign nibble bit 3.
inline void iq1_m_group(const uint8_t* b, int j, int8_t* v, float* scale) {
  using namespace grid_detail;
  const uint16_t sc[4] = {u16(b + 48), u16(b + 50), u16(b + 52), u16(b + 54)};
  const uint16_t dbits = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0xF0) | ((sc[2] >> 4) & 0xF00) | (sc[3] & 0xF000));
  const float d = half_bits_to_float(dbits);
  for (int h = 0; h < 2; ++h)
    scale[h] = d * (float)(2 * ((sc[j / 2] >> (6 * (j % 2) + 3 * h)) & 7) + 1) * 0.125f;
  for (int l = 0; l < 4; ++l) {
    const int nib = (b[32 + 2 * j + l / 2] >> (4 * (l % 2))) & 0xF;
    const int idx = b[4 * j + l] | ((nib & 7) << 8);
    const int delta = nib & 8 ? -1 : 1;
    for (int e = 0; e < 8; ++e) v[8 * l + e] = (int8_t)(8 * kIq1sGrid[8 * idx + e] + delta);
  }
}

}  // namespace spore::quant
