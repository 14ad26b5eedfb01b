// The ggml numerics of the LLM ops (NOTE [LLM numerics] in docs/design.md) against float64
// computations of llama.cpp's rounding steps written out here, at every SIMD level. For
// matmul_q, rope and attention the reference-mode result differs from these by more than the
// tolerances (float16 scales, running-product angles, float16 probabilities), so a kernel that
// ignored the attribute fails; rms_norm's float64 sum only moves the last bits (checked as such).
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "spore/half.h"
#include "spore/llm.h"
#include "spore/quant.h"
#include "ops/llm_test_util.h"
#include "test_util.h"

namespace spore::test {
namespace {

double f16(double x) { return half_bits_to_float(float_to_half_bits((float)x)); }

// llama.cpp's q8 activation block: q = round(x * 127 / amax), d16 = f16(amax / 127),
// s16 = f16(d * sum q) with the unrounded d.
struct Q8Block {
  int q[32];
  double d16, s16;
};
Q8Block q8_block(const double* x) {
  Q8Block b{};
  float amax = 0;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs((float)x[j]));
  const float d = amax / 127.f, id = amax > 0 ? 127.f / amax : 0.f;
  int sum = 0;
  for (int j = 0; j < 32; ++j) sum += b.q[j] = (int)std::nearbyint((float)x[j] * id);
  b.d16 = f16(d);
  b.s16 = f16(d * (float)sum);
  return b;
}

// n rows of k random weights in [-1, 1] quantized to `t` by its own quantize_row: the file's bytes.
std::vector<uint8_t> random_quantized_rows(GgmlType t, int64_t n, int64_t k, uint64_t seed) {
  const size_t rb = quant_row_bytes(t, k);
  const auto wv = random_values(n * k, DType::kFloat32, -1, 1, seed);
  const std::vector<float> wf(wv.begin(), wv.end());
  std::vector<uint8_t> wb(rb * (size_t)n);
  for (int64_t r = 0; r < n; ++r)
    quantize_row(t, std::span<const float>(wf.data() + r * k, (size_t)k), std::span<uint8_t>(wb.data() + r * rb, rb));
  return wb;
}

void check_blocks(GgmlType t, int64_t m, int64_t n, int64_t k, QuantLayout layout = QuantLayout::kRows) {
  SCOPED_TRACE(std::string(quant_traits(t).key) + " m " + std::to_string(m) + " layout " + std::to_string((int)layout));
  const size_t rb = quant_row_bytes(t, k);
  const std::vector<uint8_t> wb = random_quantized_rows(t, n, k, 71);
  const auto xv = random_values(m * k, DType::kFloat32, -2, 2, 72);
  Tensor w = Tensor::from_bytes(wb.data(), Shape{n, (int64_t)rb}, DType::kUInt8, Device::cpu());
  if (layout == QuantLayout::kRows8) w = repack_quant_rows(w, t);
  const std::vector<double> got = matmul_q(make_tensor(xv, Shape{m, k}, DType::kFloat32), w, t, true, layout)
                                      .to_vector<double>();
  std::vector<float> row((size_t)k);
  for (int64_t i = 0; i < n; ++i) {
    dequantize_row(t, std::span<const uint8_t>(wb.data() + i * rb, rb), row);
    for (int64_t r = 0; r < m; ++r) {
      double want = 0, mag = 0;
      for (int64_t b = 0; b < k / 32; ++b) {
        const Q8Block a = q8_block(xv.data() + r * k + b * 32);
        // q4_1: value = d * u + min; the min meets the activations through s16 only.
        double mn = 0;
        if (t == GgmlType::kQ4_1) mn = half_bits_to_float((uint16_t)(wb[i * rb + b * 20 + 2] | wb[i * rb + b * 20 + 3] << 8));
        for (int j = 0; j < 32; ++j) {
          const double term = ((double)row[b * 32 + j] - mn) * a.d16 * a.q[j];
          want += term;
          mag += std::fabs(term);
        }
        want += mn * a.s16;
        mag += std::fabs(mn * a.s16);
      }
      ASSERT_NEAR(got[r * n + i], want, 2e-6 * mag + 1e-7) << "row " << r << " col " << i;
    }
  }
}

TEST(GgmlNumerics, MatmulQQuantisesActivationsAsGgml) {
  at_every_level([] {
    for (GgmlType t : {GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ4_1})
      for (int64_t m : {1, 5}) check_blocks(t, m, 19, 128);
    // the 8-row groups repacked at load (NOTE [Repacked weights]) round the activations alike
    for (GgmlType t : {GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ5_0})
      for (int64_t m : {1, 5}) check_blocks(t, m, 24, 128, QuantLayout::kRows8);
  });
}

// llama.cpp's q8_K activations (quantize_row_q8_K_ref) for the k-quants: per 256 values,
// iscale = -127 / (the signed value of largest magnitude), q = min(127, round(iscale * x)),
// d = 1 / iscale, all in float32; the product is then sum(w * d * q) over the block.
void check_q8_k(GgmlType t, int64_t m, int64_t n, int64_t k) {
  SCOPED_TRACE(std::string(quant_traits(t).key) + " m " + std::to_string(m));
  const size_t rb = quant_row_bytes(t, k);
  const std::vector<uint8_t> wb = random_quantized_rows(t, n, k, 73);
  auto xv = random_values(m * k, DType::kFloat32, -2, 2, 74);
  xv[3] = 2.5;  // a positive extreme in the first block, so both signs of the scale are met
  const Tensor w = Tensor::from_bytes(wb.data(), Shape{n, (int64_t)rb}, DType::kUInt8, Device::cpu());
  const std::vector<double> got = matmul_q(make_tensor(xv, Shape{m, k}, DType::kFloat32), w, quant_traits(t).key, true)
                                      .to_vector<double>();
  std::vector<float> row((size_t)k);
  for (int64_t i = 0; i < n; ++i) {
    dequantize_row(t, std::span<const uint8_t>(wb.data() + i * rb, rb), row);
    for (int64_t r = 0; r < m; ++r) {
      double want = 0, mag = 0;
      for (int64_t b = 0; b < k / 256; ++b) {
        const double* x = xv.data() + r * k + b * 256;
        float amax = 0, max = 0;
        for (int j = 0; j < 256; ++j)
          if (std::fabs((float)x[j]) > amax) amax = std::fabs((float)x[j]), max = (float)x[j];
        const float iscale = -127.f / max, d = 1 / iscale;
        for (int j = 0; j < 256; ++j) {
          const int q = std::min(127, (int)std::nearbyint(iscale * (float)x[j]));
          const double term = (double)row[b * 256 + j] * d * q;
          want += term;
          mag += std::fabs(term);
        }
      }
      ASSERT_NEAR(got[r * n + i], want, 2e-6 * mag + 1e-7) << "row " << r << " col " << i;
    }
  }
}

TEST(GgmlNumerics, MatmulQQuantisesKQuantActivationsAsQ8K) {
  at_every_level([] {
    for (GgmlType t : {GgmlType::kQ4_K, GgmlType::kQ6_K})
      for (int64_t m : {1, 5}) check_q8_k(t, m, 19, 512);
  });
}

// llama.cpp's own results (tools/make_ggml_dot_fixtures.py: ggml_mul_mat on the CPU backend, the
// weights in its repacking buffer where it takes them, as llama.cpp loads a model). Spore models
// the order of llama.cpp's one-row product (NOTE [k-quants in ggml's order]), which decode takes:
// 1 row, and the 2-3 rows a speculative check or a few sequences pad to a 4-row tile, must equal
// it bit for bit at every SIMD level. Prefill batches agree to the last bits only: llama.cpp's
// own batched paths (q4_K's repacked GEMM from 4 rows, the others' from 8) round differently from its
// one-row product, while Spore gives a row the same bits in any batch. The types both repack at
// load (q4_0, iq4_nl) agree at every batch size, as do the legacy types and nvfp4, whose one-row
// order is also their batched one. The other types' order is not modelled (their sums of 32 are
// scaled per group, llama.cpp's in lanes): they agree to 1e-6 of the largest result, which a
// kernel that dropped a term (q2_0's offset did, with q8_0 activations) misses by orders.
TEST(GgmlNumerics, MatrixProductsMatchLlamaCpps) {
  enum Match { kOneRow, kEvery, kClose };
  const std::pair<const char*, Match> types[] = {
      {"q6_k", kOneRow},    {"q5_k", kOneRow},   {"q4_k", kOneRow},  {"q3_k", kOneRow},    {"q2_k", kOneRow},
      {"iq4_xs", kOneRow},  {"q4_0", kEvery},    {"iq4_nl", kEvery}, {"q8_0", kEvery},     {"q5_0", kEvery},
      {"q5_1", kEvery},     {"q4_1", kEvery},    {"nvfp4", kEvery},  {"mxfp4", kClose},    {"q1_0", kClose},
      {"q2_0", kClose},     {"tq1_0", kClose},   {"tq2_0", kClose},  {"iq2_xxs", kClose},  {"iq2_xs", kClose},
      {"iq2_s", kClose},    {"iq3_xxs", kClose}, {"iq3_s", kClose},  {"iq1_s", kClose},    {"iq1_m", kClose}};
  for (const auto& entry : types) {
    const char* type = entry.first;  // named copies: the lambda below cannot capture structured bindings (clang)
    const Match match = entry.second;
    SCOPED_TRACE(type);
    const auto path = std::filesystem::path(SPORE_SOURCE_DIR) / "tests/fixtures/quant" / (std::string("ggml_dot_") + type + ".bin");
    std::ifstream in(path, std::ios::binary);
    ASSERT_TRUE(in) << path;
    char magic[4];
    int32_t h[5];
    in.read(magic, 4).read((char*)h, sizeof h);
    ASSERT_TRUE(in && std::memcmp(magic, "SPGD", 4) == 0 && h[0] == 2) << path << ": not a ggml_dot fixture of format 2";
    const GgmlType t = (GgmlType)h[1];
    ASSERT_EQ(std::string(quant_traits(t).key), type);
    const int64_t n = h[2], k = h[3], m = h[4];
    const size_t rb = quant_row_bytes(t, k);
    std::vector<uint8_t> wb(rb * (size_t)n);
    std::vector<float> x((size_t)(m * k));
    in.read((char*)wb.data(), (std::streamsize)wb.size()).read((char*)x.data(), (std::streamsize)(x.size() * 4));
    std::vector<std::vector<float>> want((size_t)m);
    for (int64_t rows = 1; rows <= m; ++rows) {
      want[(size_t)rows - 1].resize((size_t)(rows * n));
      in.read((char*)want[(size_t)rows - 1].data(), (std::streamsize)(rows * n * 4));
    }
    ASSERT_TRUE(in) << path << " is truncated";
    Tensor w = Tensor::from_bytes(wb.data(), Shape{n, (int64_t)rb}, DType::kUInt8, Device::cpu());
    // in the layout a model load gives them (q4_0 and iq4_nl in 8-row groups, as llama.cpp's loader
    // repacks them on x86)
    const bool packed = t == GgmlType::kQ4_0 || t == GgmlType::kIQ4_NL;
    if (packed) w = repack_quant_rows(w, t);
    at_every_level([&] {
      for (int64_t rows = 1; rows <= m; ++rows) {
        const Tensor xt = Tensor::from_vector(std::vector<float>(x.begin(), x.begin() + rows * k), Shape{rows, k});
        const std::vector<float> got =
            matmul_q(xt, w, t, true, packed ? QuantLayout::kRows8 : QuantLayout::kRows).to_vector<float>();
        const std::vector<float>& e = want[(size_t)rows - 1];
        float scale = 0;  // the products' size: a result near 0 is a cancellation of terms this large
        for (float v : e) scale = std::max(scale, std::fabs(v));
        for (int64_t i = 0; i < rows * n; ++i) {
          if (match == kEvery || (match == kOneRow && rows < 4)) ASSERT_EQ(got[(size_t)i], e[(size_t)i]) << rows << " rows, activation row " << i / n << ", weight row " << i % n;
          else ASSERT_NEAR(got[(size_t)i], e[(size_t)i], 1e-6 * scale) << rows << " rows, activation row " << i / n << ", weight row " << i % n;
        }
      }
    });
  }
}

TEST(GgmlNumerics, MatmulQRoundsActivationsToHalfForHalfWeights) {
  at_every_level([] {
    const int64_t m = 3, n = 7, k = 77;
    const auto wv = random_values(n * k, DType::kFloat16, -1, 1, 81), xv = random_values(m * k, DType::kFloat32, -2, 2, 82);
    const Tensor y = matmul_q(make_tensor(xv, Shape{m, k}, DType::kFloat32), make_tensor(wv, Shape{n, k}, DType::kFloat16),
                              "f16", true);
    std::vector<double> want((size_t)(m * n));
    for (int64_t r = 0; r < m; ++r)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t e = 0; e < k; ++e) want[r * n + i] += f16(xv[r * k + e]) * wv[i * k + e];
    expect_close(y, want, Tol{2e-6, 2e-6});
  });
}

TEST(GgmlNumerics, RopeAnglesAreRunningProducts) {
  at_every_level([] {
    const int64_t S = 3, H = 2, D = 64, nf = D / 2;
    const float ts = std::pow(100000.0f, -2.0f / (float)D);
    const auto xv = random_values(S * H * D, DType::kFloat32, -1, 1, 91);
    const std::vector<int64_t> pos = {0, 7, 4097};
    RopeOptions o;
    o.seq_axis = -3;  // [1, S, H, D]
    o.interleaved = true;
    o.ggml_theta_scale = ts;
    const Tensor y = rope(make_tensor(xv, Shape{1, S, H, D}, DType::kFloat32), Tensor::from_vector(pos, Shape{S}),
                          Tensor::from_vector(std::vector<float>((size_t)nf, 1.0f), Shape{nf}), o);
    std::vector<double> want(xv.size());
    for (int64_t s = 0; s < S; ++s) {
      float theta = (float)pos[s];
      for (int64_t i = 0; i < nf; ++i, theta *= ts) {
        const double c = std::cos(theta), sn = std::sin(theta);
        for (int64_t h = 0; h < H; ++h) {
          const int64_t at = (s * H + h) * D + 2 * i;
          want[at] = xv[at] * c - xv[at + 1] * sn;
          want[at + 1] = xv[at] * sn + xv[at + 1] * c;
        }
      }
    }
    expect_close(y, want, Tol{2e-6, 2e-6});
  });
}

TEST(GgmlNumerics, AttentionRoundsAsLlamaCppWithoutFlashAttention) {
  at_every_level([] {
    const int64_t Hq = 4, Hkv = 2, S = 3, T = 40, D = 16, past = T - S;
    const auto qv = random_values(Hq * S * D, DType::kFloat32, -2, 2, 101);
    const auto kv = random_values(Hkv * T * D, DType::kFloat16, -2, 2, 102);
    const auto vv = random_values(Hkv * T * D, DType::kFloat16, -1, 1, 103);
    const double scale = 0.25;
    const Tensor o = attention(make_tensor(qv, Shape{1, Hq, S, D}, DType::kFloat32),
                               make_tensor(kv, Shape{1, Hkv, T, D}, DType::kFloat16),
                               make_tensor(vv, Shape{1, Hkv, T, D}, DType::kFloat16), scale, past, true);
    std::vector<double> want((size_t)(Hq * S * D));
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t i = 0; i < S; ++i) {
        const int64_t hk = h / (Hq / Hkv), n = past + i + 1;
        std::vector<float> p((size_t)n);
        float mx = -INFINITY;
        for (int64_t j = 0; j < n; ++j) {
          double dot = 0;
          for (int64_t t = 0; t < D; ++t) dot += f16(qv[(h * S + i) * D + t]) * kv[(hk * T + j) * D + t];
          p[j] = (float)dot * (float)scale;
          mx = std::max(mx, p[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < n; ++j) sum += p[j] = std::exp(p[j] - mx);
        const float inv = (float)(1.0 / sum);
        for (int64_t j = 0; j < n; ++j)
          for (int64_t t = 0; t < D; ++t) want[(h * S + i) * D + t] += f16(p[j] * inv) * vv[(hk * T + j) * D + t];
      }
    expect_close(o, want, Tol{2e-6, 2e-6});
  });
}

TEST(GgmlNumerics, RmsNormSumsInFloat64) {
  at_every_level([] {
    const int64_t rows = 3, d = 576;
    const auto xv = random_values(rows * d, DType::kFloat32, -3, 3, 111), wv = random_values(d, DType::kFloat32, 0, 2, 112);
    const Tensor y = rms_norm(make_tensor(xv, Shape{rows, d}, DType::kFloat32), make_tensor(wv, Shape{d}, DType::kFloat32),
                              1e-5, true);
    std::vector<double> want(xv.size());
    for (int64_t r = 0; r < rows; ++r) {
      double s = 0;
      for (int64_t j = 0; j < d; ++j) s += (double)((float)xv[r * d + j] * (float)xv[r * d + j]);
      const float inv = 1.0f / std::sqrt((float)(s / (double)d) + 1e-5f);
      for (int64_t j = 0; j < d; ++j) want[r * d + j] = (double)((float)xv[r * d + j] * inv * (float)wv[j]);
    }
    expect_close(y, want, Tol{1e-6, 1e-7});
  });
}

}  // namespace
}  // namespace spore::test
