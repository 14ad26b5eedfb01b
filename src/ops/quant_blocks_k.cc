// Reference conversions of the k-quants, blocks of 256 values (quant_blocks.h, layouts in
// include/spore/quant.h, NOTE [Quantization types]). q4_k is also written (Spore's quantiser);
// the others are read only.
#include <algorithm>
#include <cmath>

#include "ops/quant_blocks.h"
#include "spore/quant.h"

namespace spore::quant {

namespace {

int qround(float v, int lo, int hi) { return std::clamp((int)std::lround(v), lo, hi); }

void dequantize_q45_k(const uint8_t* b, float* y, bool five) {
  const float d = f16_at(b), dmin = f16_at(b + 2);
  const uint8_t* sc = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* qs = five ? b + 48 : b + 16;
  for (int j = 0; j < 8; ++j) {
    int s, m;
    kquant_scale_min(sc, j, s, m);
    const float dl = d * (float)s, ml = dmin * (float)m;
    const int shift = 4 * (j % 2);
    for (int l = 0; l < 32; ++l) {
      int q = (qs[32 * (j / 2) + l] >> shift) & 0xF;
      if (five) q |= ((qh[l] >> j) & 1) << 4;
      y[32 * j + l] = dl * (float)q - ml;
    }
  }
}

}  // namespace

// 16 sub-blocks of 16; group j of 32 (j = 0..7) takes bits 2 (j % 4) of qs[32 (j / 4) + l], its
// halves scale bytes 2 j and 2 j + 1.
void dequantize_q2_k(const uint8_t* b, float* y) {
  const uint8_t* sc = b;
  const uint8_t* qs = b + 16;
  const float d = f16_at(b + 80), dmin = f16_at(b + 82);
  for (int j = 0; j < 8; ++j) {
    const int shift = 2 * (j % 4);
    for (int l = 0; l < 32; ++l) {
      const int s = sc[2 * j + l / 16];
      y[32 * j + l] = d * (float)(s & 0xF) * (float)((qs[32 * (j / 4) + l] >> shift) & 3) - dmin * (float)(s >> 4);
    }
  }
}

// As q2_k's groups, with the third bit in bit j of hmask[l] and a signed 6-bit scale per 16.
void dequantize_q3_k(const uint8_t* b, float* y) {
  const uint8_t* hm = b;
  const uint8_t* qs = b + 32;
  const uint8_t* sc = b + 96;
  const float d = f16_at(b + 108);
  for (int j = 0; j < 8; ++j) {
    const int shift = 2 * (j % 4);
    for (int l = 0; l < 32; ++l) {
      const float dl = d * (float)(q3k_scale(sc, 2 * j + l / 16) - 32);
      const int q = ((qs[32 * (j / 4) + l] >> shift) & 3) - (((hm[l] >> j) & 1) ? 0 : 4);
      y[32 * j + l] = dl * (float)q;
    }
  }
}

void dequantize_q4_k(const uint8_t* b, float* y) { dequantize_q45_k(b, y, false); }
void dequantize_q5_k(const uint8_t* b, float* y) { dequantize_q45_k(b, y, true); }

void dequantize_q6_k(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = (const int8_t*)(b + 192);
  const float d = f16_at(b + 208);
  for (int n = 0; n < 2; ++n) {
    const uint8_t* l0 = ql + 64 * n;
    const uint8_t* h0 = qh + 32 * n;
    const int8_t* s0 = sc + 8 * n;
    float* y0 = y + 128 * n;
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = ((l0[l] & 0xF) | (((h0[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((l0[l + 32] & 0xF) | (((h0[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((l0[l] >> 4) | (((h0[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((l0[l + 32] >> 4) | (((h0[l] >> 6) & 3) << 4)) - 32;
      y0[l] = d * (float)s0[is] * (float)q1;
      y0[l + 32] = d * (float)s0[is + 2] * (float)q2;
      y0[l + 64] = d * (float)s0[is + 4] * (float)q3;
      y0[l + 96] = d * (float)s0[is + 6] * (float)q4;
    }
  }
}

void dequantize_q8_k(const uint8_t* b, float* y) {
  float d;
  std::memcpy(&d, b, 4);
  for (int j = 0; j < 256; ++j) y[j] = d * (float)(int8_t)b[4 + j];
}

// Each sub-block's affine range [-mn, max] (mn >= 0, so zero is representable), its scale and
// min quantised to 6 bits against the block's largest, then the values against the quantised
// scale and min (what a reader reconstructs).
void quantize_q4_k(const float* x, uint8_t* b) {
  float scale[8], minv[8];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    float lo = 0, hi = 0;
    for (int l = 0; l < 32; ++l) lo = std::min(lo, x[32 * j + l]), hi = std::max(hi, x[32 * j + l]);
    scale[j] = (hi - lo) / 15.f;
    minv[j] = -lo;
    max_scale = std::max(max_scale, scale[j]);
    max_min = std::max(max_min, minv[j]);
  }
  put_f16(b, max_scale / 63.f);
  put_f16(b + 2, max_min / 63.f);
  const float dq = f16_at(b), dminq = f16_at(b + 2);
  uint8_t ls[8], lm[8];
  for (int j = 0; j < 8; ++j) {
    // Scales round up, so that each sub-block's range still fits 15 steps.
    ls[j] = (uint8_t)(dq > 0 ? std::clamp((int)std::ceil(scale[j] / dq), 0, 63) : 0);
    lm[j] = (uint8_t)(dminq > 0 ? qround(minv[j] / dminq, 0, 63) : 0);
  }
  uint8_t* sc = b + 4;
  for (int j = 0; j < 4; ++j) {
    sc[j] = (uint8_t)(ls[j] | ((ls[j + 4] >> 4) << 6));
    sc[j + 4] = (uint8_t)(lm[j] | ((lm[j + 4] >> 4) << 6));
    sc[j + 8] = (uint8_t)((ls[j + 4] & 0xF) | ((lm[j + 4] & 0xF) << 4));
  }
  uint8_t* qs = b + 16;
  for (int pair = 0; pair < 4; ++pair) {
    for (int l = 0; l < 32; ++l) {
      int q[2];
      for (int half = 0; half < 2; ++half) {
        const int j = 2 * pair + half;
        const float dl = dq * ls[j], ml = dminq * lm[j];
        q[half] = dl > 0 ? qround((x[32 * j + l] + ml) / dl, 0, 15) : 0;
      }
      qs[32 * pair + l] = (uint8_t)(q[0] | (q[1] << 4));
    }
  }
}

// Symmetric 16-value sub-blocks: each sub-block's extreme value maps to -32 (levels -32..31);
// the sub-block scales are int8 against the block's d, whose extreme scale maps to -128; the
// values are then rounded against the quantised scales (what a reader reconstructs).
void quantize_q6_k(const float* x, uint8_t* b) {
  float scale[16], ext_scale = 0;
  for (int s = 0; s < 16; ++s) {
    float ext = 0;
    for (int l = 0; l < 16; ++l)
      if (std::fabs(x[16 * s + l]) > std::fabs(ext)) ext = x[16 * s + l];
    scale[s] = ext / -32.f;
    if (std::fabs(scale[s]) > std::fabs(ext_scale)) ext_scale = scale[s];
  }
  put_f16(b + 208, ext_scale / -128.f);
  const float d = f16_at(b + 208);
  int8_t* sc = (int8_t*)(b + 192);
  uint8_t q[256];
  for (int s = 0; s < 16; ++s) {
    sc[s] = (int8_t)(d != 0 ? qround(scale[s] / d, -128, 127) : 0);
    const float dl = d * (float)sc[s];
    for (int l = 0; l < 16; ++l) q[16 * s + l] = (uint8_t)(dl != 0 ? qround(x[16 * s + l] / dl, -32, 31) + 32 : 32);
  }
  uint8_t *ql = b, *qh = b + 128;
  for (int n = 0; n < 2; ++n)
    for (int l = 0; l < 32; ++l) {
      const uint8_t* e = q + 128 * n + l;  // elements l, l + 32, l + 64, l + 96 of the half
      ql[64 * n + l] = (uint8_t)((e[0] & 0xF) | ((e[64] & 0xF) << 4));
      ql[64 * n + l + 32] = (uint8_t)((e[32] & 0xF) | ((e[96] & 0xF) << 4));
      qh[32 * n + l] = (uint8_t)((e[0] >> 4) | ((e[32] >> 4) << 2) | ((e[64] >> 4) << 4) | ((e[96] >> 4) << 6));
    }
}

}  // namespace spore::quant
