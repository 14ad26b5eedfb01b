// matmul_q against dequantise-then-float64 references, at every SIMD level the CPU has, for
// every weight type, the decode (m = 1) and prefill (m > 1) paths; hostile shapes and types.
#include <cmath>
#include <cstring>
#include <random>

#include "spore/error.h"
#include "spore/half.h"
#include "spore/llm.h"
#include "spore/quant.h"
#include "ops/llm_test_util.h"
#include "test_util.h"

namespace spore::test {
namespace {


// Where a read-only type's block keeps its float16 scale (and second scale / min), so that
// random bytes get sane ones; -1: none.
struct ScaleAt {
  int d, m;
};
ScaleAt scale_at(GgmlType t) {
  switch (t) {
    case GgmlType::kQ5_0: case GgmlType::kIQ4_NL: case GgmlType::kIQ4_XS: case GgmlType::kIQ2_XXS:
    case GgmlType::kIQ2_XS: case GgmlType::kIQ2_S: case GgmlType::kIQ3_XXS: case GgmlType::kIQ3_S:
    case GgmlType::kIQ1_S: case GgmlType::kQ1_0: case GgmlType::kQ2_0: return {0, -1};
    case GgmlType::kQ5_1: case GgmlType::kQ5_K: return {0, 2};
    case GgmlType::kQ6_K: return {208, -1};
    case GgmlType::kQ2_K: return {80, 82};
    case GgmlType::kQ3_K: return {108, -1};
    case GgmlType::kTQ1_0: return {52, -1};
    case GgmlType::kTQ2_0: return {64, -1};
    default: return {-1, -1};
  }
}

// n rows of k weights in type t: quantised from random floats where Spore writes the type,
// otherwise random bytes (every bit pattern is a valid block) with sane scales.
std::vector<uint8_t> make_weights(GgmlType t, int64_t n, int64_t k, uint32_t seed) {
  const size_t rb = quant_row_bytes(t, k);
  std::vector<uint8_t> w(rb * (size_t)n);
  std::mt19937 gen(seed);
  const QuantTraits& f = quant_traits(t);
  if (!f.quantize) {
    for (auto& b : w) b = (uint8_t)gen();
    const ScaleAt at = scale_at(t);
    for (size_t blk = 0; blk < w.size() / f.block_bytes; ++blk) {
      uint8_t* b = w.data() + blk * f.block_bytes;
      const uint16_t d = float_to_half_bits(0.01f + 0.001f * (float)(blk % 7));
      const uint16_t m = float_to_half_bits(0.004f * ((float)(blk % 5) - 2));
      if (t == GgmlType::kMXFP4) b[0] = (uint8_t)(118 + blk % 6);  // 2^-10 .. 2^-5
      if (t == GgmlType::kNVFP4)  // UE4M3 scales 2^-4 .. 2^-2 with every mantissa
        for (int s = 0; s < 4; ++s) b[s] = (uint8_t)(((3 + (blk + s) % 3) << 3) | ((blk + 3 * s) % 8));
      if (t == GgmlType::kIQ1_M)  // d's four nibbles sit in the top of the four scale words
        for (int w = 0; w < 4; ++w) b[49 + 2 * w] = (uint8_t)((b[49 + 2 * w] & 0x0F) | (((d >> (4 * w)) & 0xF) << 4));
      if (at.d >= 0) std::memcpy(b + at.d, &d, 2);
      if (at.m >= 0) std::memcpy(b + at.m, &m, 2);
    }
    return w;
  }
  const auto v = random_values(n * k, DType::kFloat32, -1, 1, seed);
  const std::vector<float> fv(v.begin(), v.end());
  for (int64_t r = 0; r < n; ++r)
    quantize_row(t, std::span<const float>(fv.data() + r * k, (size_t)k), std::span<uint8_t>(w.data() + r * rb, rb));
  return w;
}

std::vector<double> dequantised(GgmlType t, const std::vector<uint8_t>& w, int64_t n, int64_t k) {
  const size_t rb = quant_row_bytes(t, k);
  std::vector<float> row((size_t)k);
  std::vector<double> out;
  for (int64_t r = 0; r < n; ++r) {
    dequantize_row(t, std::span<const uint8_t>(w.data() + r * rb, rb), row);
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

// The activations as the kernel's q8 blocks hold them: round(x * 127 / amax) * amax / 127.
std::vector<double> q8_rounded(const std::vector<double>& x) {
  std::vector<double> out(x.size());
  for (size_t b = 0; b < x.size() / 32; ++b) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs((float)x[b * 32 + j]));
    const float d = amax / 127.f, id = amax > 0 ? 127.f / amax : 0.f;
    for (int j = 0; j < 32; ++j) out[b * 32 + j] = (double)d * std::nearbyint((float)x[b * 32 + j] * id);
  }
  return out;
}

// layout kRows8: the same weights repacked into 8-row groups (NOTE [Repacked weights]).
void check_type(GgmlType t, int64_t m, int64_t n, int64_t k, QuantLayout layout = QuantLayout::kRows) {
  SCOPED_TRACE(std::string(quant_traits(t).key) + " m " + std::to_string(m) + " n " + std::to_string(n) + " k " +
               std::to_string(k) + " layout " + std::to_string((int)layout));
  const std::vector<uint8_t> wb = make_weights(t, n, k, 51 + (uint32_t)m);
  const std::vector<double> wd = dequantised(t, wb, n, k);
  const std::vector<double> xv = random_values(m * k, DType::kFloat32, -2, 2, 52);
  const std::vector<double> xq = q8_rounded(xv);
  Tensor w = Tensor::from_bytes(wb.data(), Shape{n, (int64_t)quant_row_bytes(t, k)}, DType::kUInt8, Device::cpu());
  if (layout == QuantLayout::kRows8) w = repack_quant_rows(w, t);
  const Tensor y = matmul_q(make_tensor(xv, Shape{m, k}, DType::kFloat32), w, t, false, layout);
  ASSERT_EQ(y.shape(), (Shape{m, n}));
  const std::vector<double> got = y.to_vector<double>();
  for (int64_t r = 0; r < m; ++r)
    for (int64_t i = 0; i < n; ++i) {
      // 1. Against the q8-rounded activations: only float32 accumulation separates the two.
      // 2. Against the exact activations, within the q8 rounding: |x - xq| <= amax / 254 per block.
      double exact = 0, rounded = 0, mag = 0, bound = 0;
      for (int64_t b = 0; b < k / 32; ++b) {
        double amax = 0;
        for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(xv[r * k + b * 32 + j]));
        for (int j = 0; j < 32; ++j) {
          const int64_t e = b * 32 + j;
          exact += xv[r * k + e] * wd[i * k + e];
          rounded += xq[r * k + e] * wd[i * k + e];
          mag += std::fabs(xq[r * k + e] * wd[i * k + e]);
          bound += std::fabs(wd[i * k + e]) * amax / 254;
        }
      }
      const double g = got[r * n + i];
      ASSERT_NEAR(g, rounded, 1e-5 * mag + 1e-6) << "row " << r << " col " << i;
      ASSERT_NEAR(g, exact, bound * 1.001 + 1e-5 * mag + 1e-6) << "row " << r << " col " << i;
    }
}

TEST(MatmulQ, EveryBlockTypeMatchesDequantisedFloat64) {
  at_every_level([] {
    // Every row of the quantization table with a product (NOTE [Quantization types]): a type
    // added to the table without a kernel fails here.
    int types = 0;
    for (const QuantTraits& q : all_quant_types()) {
      if (q.activations != QuantActivations::kQ8Groups) continue;
      ++types;
      if (q.block_size == 32)
        for (int64_t m : {1, 3, 9}) check_type(q.type, m, 37, 96);
      else
        for (int64_t m : {1, 6}) check_type(q.type, m, 21, 512);
    }
    // q4_0 q4_1 q5_0 q5_1 q8_0 iq4_nl mxfp4 q2_k..q6_k iq4_xs tq1_0 tq2_0, the 7 grid types, nvfp4
    // (blocks of 64), q2_0 (64) and q1_0 (128)
    EXPECT_EQ(types, 25);
  });
}

// The row-tiled kernels on repacked q4_0 / q5_0 / q8_0 (prefill tiles of 4 rows and the single-row
// tail, decode m = 1) against the same float64 references; the layout is an exact permutation;
// a row's result does not depend on the rows computed beside it; misuse is a typed error.
TEST(MatmulQ, RepackedEightRowGroups) {
  at_every_level([] {
    for (GgmlType t : {GgmlType::kQ4_0, GgmlType::kIQ4_NL, GgmlType::kQ5_0, GgmlType::kQ8_0}) {
      for (int64_t m : {1, 4, 9}) check_type(t, m, 24, 96, QuantLayout::kRows8);
      const int64_t n = 16, k = 64, rb = (int64_t)quant_row_bytes(t, k);
      const std::vector<uint8_t> wb = make_weights(t, n, k, 81);
      const Tensor w = Tensor::from_bytes(wb.data(), Shape{n, rb}, DType::kUInt8, Device::cpu());
      const Tensor p = repack_quant_rows(w, t);
      EXPECT_EQ(p.shape(), (Shape{n / 8, 8 * rb}));
      const std::vector<uint8_t> back = unpack_quant_rows(p, t).to_vector<uint8_t>();
      EXPECT_EQ(back, wb);
      std::vector<uint8_t> row((size_t)rb);  // one row back, as a tied embedding table reads it
      unpack_quant_row(t, p.data<uint8_t>(), rb, 13, row.data());
      EXPECT_TRUE(std::equal(row.begin(), row.end(), wb.begin() + 13 * rb));
      EXPECT_NE(p.to_vector<uint8_t>(), wb);  // a real permutation
      // batch independence, in both numerics: row 5 of a 7-row product equals its 1-row product
      const auto xv = random_values(7 * k, DType::kFloat32, -2, 2, 82);
      const Tensor x = make_tensor(xv, Shape{7, k}, DType::kFloat32);
      for (bool ggml : {false, true}) {
        const std::vector<float> all = matmul_q(x, p, t, ggml, QuantLayout::kRows8).to_vector<float>();
        const std::vector<float> one = matmul_q(slice(x, 0, 5, 6).contiguous(), p, t, ggml, QuantLayout::kRows8).to_vector<float>();
        for (int64_t i = 0; i < n; ++i) EXPECT_EQ(all[(size_t)(5 * n + i)], one[(size_t)i]) << "col " << i;
      }
    }
  });
  const Tensor x = zeros({2, 64});  // a q4_0 row of 64 values: 36 bytes, a group of 8 rows 288
  EXPECT_EQ(matmul_q(x, zeros({2, 288}, DType::kUInt8), GgmlType::kQ4_0, false, QuantLayout::kRows8).shape(),
            (Shape{2, 16}));  // two groups: 16 output columns
  EXPECT_EQ(error_code_of([&] { matmul_q(x, zeros({1, 320}, DType::kUInt8), GgmlType::kQ4_1, false, QuantLayout::kRows8); }),
            ErrorCode::kValue);  // a type the layout does not take
  EXPECT_EQ(error_code_of([&] { matmul_q(x, zeros({2, 36}, DType::kUInt8), GgmlType::kQ4_0, false, QuantLayout::kRows8); }),
            ErrorCode::kShape);  // GGUF rows passed as groups
  EXPECT_EQ(error_code_of([&] { matmul_q(zeros({2, 64}, DType::kFloat64), zeros({1, 288}, DType::kUInt8), GgmlType::kQ4_0,
                                         false, QuantLayout::kRows8); }),
            ErrorCode::kDType);
  EXPECT_EQ(error_code_of([&] { matmul_q(x, zeros({1, 288}, DType::kUInt8), GgmlType::kQ4_0, false, (QuantLayout)7); }),
            ErrorCode::kValue);
  EXPECT_EQ(error_code_of([&] { repack_quant_rows(zeros({12, 36}, DType::kUInt8), GgmlType::kQ4_0); }), ErrorCode::kValue);
  EXPECT_EQ(error_code_of([&] { repack_quant_rows(zeros({8, 35}, DType::kUInt8), GgmlType::kQ4_0); }), ErrorCode::kShape);
  EXPECT_EQ(error_code_of([&] { unpack_quant_rows(zeros({1, 287}, DType::kUInt8), GgmlType::kQ4_0); }), ErrorCode::kShape);
}

TEST(MatmulQ, HalfAndBFloat16Weights) {
  at_every_level([] {
    for (DType wt : {DType::kFloat16, DType::kBFloat16})
      for (int64_t m : {1, 5}) {
        SCOPED_TRACE(std::string(dtype_name(wt)) + " m " + std::to_string(m));
        const int64_t n = 13, k = 203;  // k not a multiple of 8 or 64: the tails
        const auto wv = random_values(n * k, wt, -1, 1, 61), xv = random_values(m * k, DType::kFloat32, -2, 2, 62);
        const Tensor y = matmul_q(make_tensor(xv, Shape{m, k}, DType::kFloat32), make_tensor(wv, Shape{n, k}, wt),
                                  wt == DType::kFloat16 ? "f16" : "bf16");
        std::vector<double> want((size_t)(m * n));
        for (int64_t r = 0; r < m; ++r)
          for (int64_t i = 0; i < n; ++i)
            for (int64_t e = 0; e < k; ++e) want[r * n + i] += xv[r * k + e] * wv[i * k + e];
        expect_close(y, want, Tol{2e-5, 2e-5});
      }
  });
}

TEST(MatmulQ, HostileInputsAreTypedErrors) {
  const Tensor x = zeros({2, 64});
  const Tensor w = zeros({3, 68}, DType::kUInt8);  // 2 q8_0 blocks per row
  EXPECT_EQ(error_code_of([&] { matmul_q(x, w, "q8_0"); }), ErrorCode::kInternal) << "a valid call";
  EXPECT_EQ(error_code_of([&] { matmul_q(x, w, "q9_9"); }), ErrorCode::kValue);
  EXPECT_EQ(error_code_of([&] { matmul_q(x, w, GgmlType::kQ8_K); }), ErrorCode::kValue);  // no product: dequantised
  EXPECT_EQ(error_code_of([&] { matmul_q(x, w, (GgmlType)77); }), ErrorCode::kValue);
  EXPECT_EQ(error_code_of([&] { matmul_q(x, zeros({3, 67}, DType::kUInt8), "q8_0"); }), ErrorCode::kShape);  // bytes per row
  EXPECT_EQ(error_code_of([&] { matmul_q(zeros({2, 60}), zeros({3, 60}, DType::kUInt8), "q8_0"); }), ErrorCode::kShape);  // k % 32
  EXPECT_EQ(error_code_of([&] { matmul_q(x, w, "q4_k"); }), ErrorCode::kShape);  // k = 64 < one super-block
  EXPECT_EQ(error_code_of([&] { matmul_q(x, zeros({3, 68}), "q8_0"); }), ErrorCode::kDType);  // float32 bytes
  EXPECT_EQ(error_code_of([&] { matmul_q(zeros({2, 64}, DType::kFloat16), w, "q8_0"); }), ErrorCode::kDType);
  EXPECT_EQ(error_code_of([&] { matmul_q(x, zeros({3, 64}, DType::kUInt8), "f16"); }), ErrorCode::kDType);
  EXPECT_EQ(error_code_of([&] { matmul_q(x, zeros({3, 63}, DType::kFloat16), "f16"); }), ErrorCode::kShape);
  EXPECT_EQ(error_code_of([&] { matmul_q(zeros({64}), w, "q8_0"); }), ErrorCode::kDType);  // x must be 2-D
}

}  // namespace
}  // namespace spore::test
