// Reference (de)quantisation of the GGUF block formats (include/spore/quant.h). Scalar and plain:
// the backends' matmul_q kernels are checked against these, and these against
// float64 arithmetic in tests/ops/quant_blocks_test.cc.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "spore/error.h"
#include "spore/half.h"
#include "spore/quant.h"

namespace spore {

namespace {

constexpr QuantFormat kFormats[] = {
    {QuantType::kQ8_0, "q8_0", 32, 34},  {QuantType::kQ4_0, "q4_0", 32, 18},
    {QuantType::kQ4_1, "q4_1", 32, 20},  {QuantType::kQ4_K, "q4_k", 256, 144},
    {QuantType::kQ5_K, "q5_k", 256, 176}, {QuantType::kQ6_K, "q6_k", 256, 210},
    {QuantType::kF16, "f16", 1, 2},      {QuantType::kBF16, "bf16", 1, 2},
};

float f16(const uint8_t* p) {
  uint16_t b;
  std::memcpy(&b, p, 2);
  return half_bits_to_float(b);
}
void put_f16(uint8_t* p, float v) {
  uint16_t b = float_to_half_bits(v);
  std::memcpy(p, &b, 2);
}

void dequant_block(QuantType t, const uint8_t* b, float* y) {
  switch (t) {
    case QuantType::kQ8_0: {
      const float d = f16(b);
      for (int j = 0; j < 32; ++j) y[j] = d * (float)(int8_t)b[2 + j];
      return;
    }
    case QuantType::kQ4_0: {
      const float d = f16(b);
      for (int j = 0; j < 16; ++j) {
        y[j] = d * (float)((b[2 + j] & 0xF) - 8);
        y[j + 16] = d * (float)((b[2 + j] >> 4) - 8);
      }
      return;
    }
    case QuantType::kQ4_1: {
      const float d = f16(b), m = f16(b + 2);
      for (int j = 0; j < 16; ++j) {
        y[j] = d * (float)(b[4 + j] & 0xF) + m;
        y[j + 16] = d * (float)(b[4 + j] >> 4) + m;
      }
      return;
    }
    case QuantType::kQ4_K:
    case QuantType::kQ5_K: {
      const bool five = t == QuantType::kQ5_K;
      const float d = f16(b), dmin = f16(b + 2);
      const uint8_t* sc = b + 4;
      const uint8_t* qh = b + 16;
      const uint8_t* qs = five ? b + 48 : b + 16;
      for (int pair = 0; pair < 4; ++pair) {
        for (int half = 0; half < 2; ++half) {
          const int j = 2 * pair + half;
          int s, m;
          kquant_scale_min(sc, j, s, m);
          const float dl = d * (float)s, ml = dmin * (float)m;
          for (int l = 0; l < 32; ++l) {
            int q = half ? qs[32 * pair + l] >> 4 : qs[32 * pair + l] & 0xF;
            if (five && ((qh[l] >> j) & 1)) q += 16;
            y[32 * j + l] = dl * (float)q - ml;
          }
        }
      }
      return;
    }
    case QuantType::kQ6_K: {
      const uint8_t* ql = b;
      const uint8_t* qh = b + 128;
      const int8_t* sc = (const int8_t*)(b + 192);
      const float d = f16(b + 208);
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
      return;
    }
    case QuantType::kF16: {
      y[0] = f16(b);
      return;
    }
    case QuantType::kBF16: {
      uint16_t v;
      std::memcpy(&v, b, 2);
      y[0] = bf16_bits_to_float(v);
      return;
    }
  }
}

// Round to nearest, ties away from zero, clamped to [lo, hi].
int qround(float v, int lo, int hi) { return std::clamp((int)std::lround(v), lo, hi); }

// Symmetric 32-value blocks: d = amax / qmax (q8_0: 127; q4_0: the signed extreme maps to -8).
void quant_block_32(QuantType t, const float* x, uint8_t* b) {
  if (t == QuantType::kQ8_0) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    put_f16(b, amax / 127.f);
    const float d = f16(b), id = d != 0 ? 1.f / d : 0.f;  // against the scale a reader sees
    for (int j = 0; j < 32; ++j) b[2 + j] = (uint8_t)(int8_t)qround(x[j] * id, -127, 127);
    return;
  }
  if (t == QuantType::kQ4_0) {
    // The value of largest magnitude maps to -8 so that all 16 levels are used.
    float ext = 0;
    for (int j = 0; j < 32; ++j)
      if (std::fabs(x[j]) > std::fabs(ext)) ext = x[j];
    put_f16(b, ext / -8.f);
    const float d = f16(b), id = d != 0 ? 1.f / d : 0.f;
    for (int j = 0; j < 16; ++j) {
      const int lo = qround(x[j] * id + 8.f, 0, 15), hi = qround(x[j + 16] * id + 8.f, 0, 15);
      b[2 + j] = (uint8_t)(lo | (hi << 4));
    }
    return;
  }
  // q4_1: affine over [min, max].
  float mn = x[0], mx = x[0];
  for (int j = 1; j < 32; ++j) mn = std::min(mn, x[j]), mx = std::max(mx, x[j]);
  put_f16(b, (mx - mn) / 15.f);
  put_f16(b + 2, mn);
  const float d = f16(b), id = d != 0 ? 1.f / d : 0.f;
  mn = f16(b + 2);
  for (int j = 0; j < 16; ++j) {
    const int lo = qround((x[j] - mn) * id, 0, 15), hi = qround((x[j + 16] - mn) * id, 0, 15);
    b[4 + j] = (uint8_t)(lo | (hi << 4));
  }
}

// q4_k: each sub-block's affine range [-mn, max] (mn >= 0, so zero is representable), its scale
// and min quantised to 6 bits against the block's largest, then the values against the
// quantised scale and min (what a reader reconstructs).
void quant_block_q4_k(const float* x, uint8_t* b) {
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
  const float d = max_scale / 63.f, dmin = max_min / 63.f;
  put_f16(b, d);
  put_f16(b + 2, dmin);
  const float dq = f16(b), dminq = f16(b + 2);
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

void check_bytes(QuantType t, int64_t k, size_t got, const char* what) {
  const size_t want = quant_row_bytes(t, k);
  if (got != want)
    throw Error(ErrorCode::kShape, std::string(what) + ": a " + quant_format(t).name + " row of " +
                                       std::to_string(k) + " values is " + std::to_string(want) +
                                       " bytes, got " + std::to_string(got));
}

}  // namespace

const QuantFormat& quant_format(QuantType type) { return kFormats[(int)type]; }

std::optional<QuantType> parse_quant_type(std::string_view name) {
  for (const QuantFormat& f : kFormats)
    if (name == f.name) return f.type;
  return std::nullopt;
}

size_t quant_row_bytes(QuantType type, int64_t k) {
  const QuantFormat& f = quant_format(type);
  if (k < 0 || k % f.block_size != 0)
    throw Error(ErrorCode::kShape, std::string(f.name) + " rows hold a multiple of " +
                                       std::to_string(f.block_size) + " values, got " + std::to_string(k) +
                                       " (pad the row or use another type)");
  return (size_t)(k / f.block_size) * (size_t)f.block_bytes;
}

void dequantize_row(QuantType type, std::span<const uint8_t> bytes, std::span<float> out) {
  check_bytes(type, (int64_t)out.size(), bytes.size(), "dequantize_row");
  const QuantFormat& f = quant_format(type);
  const size_t nb = out.size() / (size_t)f.block_size;
  for (size_t i = 0; i < nb; ++i)
    dequant_block(type, bytes.data() + i * f.block_bytes, out.data() + i * f.block_size);
}

void quantize_row(QuantType type, std::span<const float> in, std::span<uint8_t> bytes) {
  check_bytes(type, (int64_t)in.size(), bytes.size(), "quantize_row");
  const QuantFormat& f = quant_format(type);
  const size_t nb = in.size() / (size_t)f.block_size;
  for (size_t i = 0; i < nb; ++i) {
    const float* x = in.data() + i * f.block_size;
    uint8_t* b = bytes.data() + i * f.block_bytes;
    switch (type) {
      case QuantType::kQ8_0:
      case QuantType::kQ4_0:
      case QuantType::kQ4_1: quant_block_32(type, x, b); break;
      case QuantType::kQ4_K: quant_block_q4_k(x, b); break;
      case QuantType::kF16: put_f16(b, x[0]); break;
      case QuantType::kBF16: {
        uint16_t v = float_to_bf16_bits(x[0]);
        std::memcpy(b, &v, 2);
        break;
      }
      default:
        throw Error(ErrorCode::kUnsupported, std::string("quantize_row: writing ") + f.name +
                                                 " is not implemented (q8_0, q4_0, q4_1, q4_k, f16 and bf16 are)");
    }
  }
}

}  // namespace spore
