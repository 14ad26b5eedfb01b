// The GGUF block formats (include/spore/quant.h): hand-assembled blocks decode to hand-computed
// values, quantize_row round-trips within the format's step, and bad sizes are typed errors.
#include <cmath>
#include <cstring>

#include "spore/error.h"
#include "spore/half.h"
#include "spore/quant.h"
#include "ops/llm_test_util.h"
#include "test_util.h"

namespace spore::test {
namespace {

void put_half(uint8_t* p, float v) {
  const uint16_t b = float_to_half_bits(v);
  std::memcpy(p, &b, 2);
}

std::vector<float> dequant(GgmlType t, const std::vector<uint8_t>& bytes, int64_t k) {
  std::vector<float> out((size_t)k);
  dequantize_row(t, bytes, out);
  return out;
}

TEST(QuantBlocks, SizesFollowTheGgufLayouts) {
  EXPECT_EQ(quant_row_bytes(GgmlType::kQ8_0, 64), 68u);
  EXPECT_EQ(quant_row_bytes(GgmlType::kQ4_0, 64), 36u);
  EXPECT_EQ(quant_row_bytes(GgmlType::kQ4_1, 64), 40u);
  EXPECT_EQ(quant_row_bytes(GgmlType::kQ4_K, 512), 288u);
  EXPECT_EQ(quant_row_bytes(GgmlType::kQ5_K, 256), 176u);
  EXPECT_EQ(quant_row_bytes(GgmlType::kQ6_K, 256), 210u);
  EXPECT_EQ(quant_row_bytes(GgmlType::kF16, 3), 6u);
  EXPECT_EQ(parse_quant_type("q4_k"), GgmlType::kQ4_K);
  EXPECT_FALSE(parse_quant_type("q9_9").has_value());
}

TEST(QuantBlocks, HandAssembledQ8Q4Q41Blocks) {
  std::vector<uint8_t> q8(34);
  put_half(q8.data(), 0.5f);
  for (int j = 0; j < 32; ++j) q8[2 + j] = (uint8_t)(int8_t)(j - 16);
  auto y = dequant(GgmlType::kQ8_0, q8, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], 0.5f * (float)(j - 16)) << j;

  std::vector<uint8_t> q4(18);
  put_half(q4.data(), 2.0f);
  for (int j = 0; j < 16; ++j) q4[2 + j] = (uint8_t)((j & 0xF) | ((15 - j) << 4));
  y = dequant(GgmlType::kQ4_0, q4, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 2.0f * (float)(j - 8)) << j;             // low nibble: first half
    EXPECT_EQ(y[j + 16], 2.0f * (float)(15 - j - 8)) << j;   // high nibble: second half
  }

  std::vector<uint8_t> q41(20);
  put_half(q41.data(), 0.25f);
  put_half(q41.data() + 2, -1.0f);
  for (int j = 0; j < 16; ++j) q41[4 + j] = (uint8_t)(3 | (12 << 4));
  y = dequant(GgmlType::kQ4_1, q41, 32);
  EXPECT_EQ(y[0], 0.25f * 3 - 1);
  EXPECT_EQ(y[31], 0.25f * 12 - 1);
}

// A q4_k / q5_k block whose 12 scale bytes are assembled bit by bit: sub-block j has scale
// 10 + 7j and min 60 - 5j (6 bits each; j >= 4 needs the high bits stored beside j - 4).
std::vector<uint8_t> kquant_block(bool five) {
  std::vector<uint8_t> b(five ? 176 : 144, 0);
  put_half(b.data(), 0.125f);
  put_half(b.data() + 2, 0.0625f);
  int sc[8], mn[8];
  for (int j = 0; j < 8; ++j) sc[j] = 10 + 7 * j, mn[j] = 60 - 5 * j;
  uint8_t* s = b.data() + 4;
  for (int j = 0; j < 4; ++j) {
    s[j] = (uint8_t)((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    s[j + 4] = (uint8_t)((mn[j] & 63) | ((mn[j + 4] >> 4) << 6));
    s[j + 8] = (uint8_t)((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
  }
  uint8_t* qs = b.data() + (five ? 48 : 16);
  for (int i = 0; i < 128; ++i) qs[i] = (uint8_t)((i % 16) | ((15 - i % 16) << 4));
  if (five)
    for (int l = 0; l < 32; ++l) b[16 + l] = (uint8_t)(l % 2 ? 0xAA : 0x55);  // alternate sub-blocks' 5th bits
  return b;
}

TEST(QuantBlocks, HandAssembledKQuantBlocks) {
  for (bool five : {false, true}) {
    SCOPED_TRACE(five ? "q5_k" : "q4_k");
    const auto y = dequant(five ? GgmlType::kQ5_K : GgmlType::kQ4_K, kquant_block(five), 256);
    for (int j = 0; j < 8; ++j)
      for (int l = 0; l < 32; ++l) {
        const int i = 32 * (j / 2) + l;  // the byte holding this value
        int q = j % 2 ? 15 - i % 16 : i % 16;
        if (five) q += (((l % 2 ? 0xAA : 0x55) >> j) & 1) * 16;
        const double want = 0.125 * (10 + 7 * j) * q - 0.0625 * (60 - 5 * j);
        EXPECT_NEAR(y[32 * j + l], want, 1e-5) << "sub-block " << j << " value " << l;
      }
  }
}

// The kernels read a q4_k / q5_k block's eight scales and mins at once; the one-at-a-time reading
// the dequantiser uses is the reference, over every bit of the 12 bytes.
TEST(QuantBlocks, EightScalesAtOnceEqualTheOneAtATimeReading) {
  uint64_t state = 0x243F6A8885A308D3ull;
  for (int trial = 0; trial < 2000; ++trial) {
    uint8_t s[12];
    for (uint8_t& b : s) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      b = (uint8_t)(state >> 56);
    }
    uint8_t scales[8], mins[8];
    kquant_scales_mins8(s, scales, mins);
    for (int j = 0; j < 8; ++j) {
      int scale, min;
      kquant_scale_min(s, j, scale, min);
      ASSERT_EQ(scales[j], scale) << "trial " << trial << " j " << j;
      ASSERT_EQ(mins[j], min) << "trial " << trial << " j " << j;
    }
  }
}

TEST(QuantBlocks, HandAssembledQ6K) {
  std::vector<uint8_t> b(210);
  for (int i = 0; i < 128; ++i) b[i] = (uint8_t)(i * 37);  // ql
  for (int i = 0; i < 64; ++i) b[128 + i] = (uint8_t)(i * 101 + 7);  // qh
  for (int i = 0; i < 16; ++i) b[192 + i] = (uint8_t)(int8_t)(i - 8);  // scales
  put_half(b.data() + 208, 0.5f);
  const auto y = dequant(GgmlType::kQ6_K, b, 256);
  // Element e: half n = e / 128, r = e % 128, quarter g = r / 32, l = r % 32. Low 4 bits from
  // ql[64n + l + 32 (g odd)], high nibble when g >= 2; 2 high bits from qh[32n + l] at bit 2g;
  // scale index 8n + l / 16 + 2g.
  for (int e = 0; e < 256; ++e) {
    const int n = e / 128, r = e % 128, g = r / 32, l = r % 32;
    const uint8_t qlb = b[64 * n + l + (g % 2) * 32];
    const int lo = g >= 2 ? qlb >> 4 : qlb & 15;
    const int hi = (b[128 + 32 * n + l] >> (2 * g)) & 3;
    const int scale = (int8_t)b[192 + 8 * n + l / 16 + 2 * g];
    EXPECT_EQ(y[e], 0.5f * (float)scale * (float)((lo | (hi << 4)) - 32)) << e;
  }
}

TEST(QuantBlocks, QuantizeRoundTripsWithinTheFormatsStep) {
  const auto xv = random_values(512, DType::kFloat32, -3, 2, 41);
  const std::vector<float> x(xv.begin(), xv.end());
  for (GgmlType t : {GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ5_0, GgmlType::kQ4_1, GgmlType::kQ4_K, GgmlType::kQ6_K}) {
    const QuantTraits& f = quant_traits(t);
    SCOPED_TRACE(f.name);
    std::vector<uint8_t> bytes(quant_row_bytes(t, 512));
    quantize_row(t, x, bytes);
    const auto y = dequant(t, bytes, 512);
    // One quantisation step of the block (its range over the levels it has), halved, plus the
    // k-quants' 6-bit min rounding: the error a correct encoder stays within.
    const int group = 32, levels = 15;
    for (int g = 0; g < 512 / group; ++g) {
      float lo = 0, hi = 0;
      for (int l = 0; l < group; ++l) lo = std::min(lo, x[g * group + l]), hi = std::max(hi, x[g * group + l]);
      double step = (double)(hi - lo) / levels;
      if (t == GgmlType::kQ8_0) step = std::max(-lo, hi) / 127.0;       // symmetric, 127 steps a side
      if (t == GgmlType::kQ4_0) step = 2 * std::max(-lo, hi) / 8.0;  // -8..7: +amax can round a full step
      if (t == GgmlType::kQ5_0) step = 2 * std::max(-lo, hi) / 16.0;  // -16..15: likewise
      if (t == GgmlType::kQ6_K) step = 2 * std::max(-lo, hi) / 32.0;  // -32..31 per 16 values
      double bound = 0.5 * step * 1.01 + 1e-6;
      if (t == GgmlType::kQ4_K) bound += 3.0 / 63 / 2 + step * 0.5;  // min step (range 3 / 63 levels) and scale rounding up
      if (t == GgmlType::kQ6_K) bound += 3.0 / 256 * 1.01;  // int8 sub-block scales: 32 levels of half a step of max / 128
      for (int l = 0; l < group; ++l)
        ASSERT_LE(std::fabs(y[g * group + l] - x[g * group + l]), bound) << "group " << g << " value " << l;
    }
  }
}

TEST(QuantBlocks, WrongSizesAndReadOnlyTypesAreTypedErrors) {
  std::vector<float> out(64);
  std::vector<uint8_t> bytes(67);
  EXPECT_EQ(error_code_of([&] { dequantize_row(GgmlType::kQ8_0, bytes, out); }), ErrorCode::kShape);
  std::vector<float> odd(100);
  EXPECT_EQ(error_code_of([&] { quant_row_bytes(GgmlType::kQ4_0, 100); }), ErrorCode::kShape);
  EXPECT_EQ(error_code_of([&] { dequantize_row(GgmlType::kQ4_0, bytes, odd); }), ErrorCode::kShape);
  std::vector<float> x(256);
  std::vector<uint8_t> q5(176);
  EXPECT_EQ(error_code_of([&] { quantize_row(GgmlType::kQ5_K, x, q5); }), ErrorCode::kUnsupported);
}

}  // namespace
}  // namespace spore::test
