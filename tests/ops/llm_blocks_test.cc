// rms_norm, rope, attention and kv_cache_write against float64 references written here, at
// every SIMD level the CPU has, plus their typed errors (NOTE [LLM blocks]).
#include <cmath>
#include <limits>

#include "spore/error.h"
#include "spore/llm.h"
#include "ops/llm_test_util.h"
#include "test_util.h"

namespace spore::test {
namespace {

// ---- rms_norm -------------------------------------------------------------------------------
std::vector<double> rms_norm_ref(const std::vector<double>& x, const std::vector<double>& w, double eps) {
  const size_t d = w.size();
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / d; ++r) {
    double ss = 0;
    for (size_t j = 0; j < d; ++j) ss += x[r * d + j] * x[r * d + j];
    const double inv = 1 / std::sqrt(ss / (double)d + eps);
    for (size_t j = 0; j < d; ++j) y[r * d + j] = x[r * d + j] * inv * w[j];
  }
  return y;
}

TEST(RmsNorm, MatchesFloat64InEveryFloatingDtype) {
  at_every_level([] {
    for (DType t : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
      SCOPED_TRACE(dtype_name(t));
      const auto xv = random_values(5 * 67, t, -3, 3, 1), wv = random_values(67, t, -1.5, 1.5, 2);
      const Tensor y = rms_norm(make_tensor(xv, Shape{5, 67}, t), make_tensor(wv, Shape{67}, t), 1e-6);
      EXPECT_EQ(y.dtype(), t);
      Tol tol = tolerance(t);
      if (t == DType::kFloat32) tol = {1e-5, 1e-5};  // a sum of 67 squares in float
      expect_close(y, rms_norm_ref(xv, wv, 1e-6), tol);
    }
  });
}

TEST(RmsNorm, PerHeadNormOverTheLastAxis) {
  // Qwen3's q/k norm: [B, S, H, Dh] normalised per head with one weight of Dh.
  const auto xv = random_values(2 * 3 * 4 * 16, DType::kFloat32, -2, 2, 3);
  const auto wv = random_values(16, DType::kFloat32, 0.5, 1.5, 4);
  const Tensor y = rms_norm(make_tensor(xv, Shape{2, 3, 4, 16}, DType::kFloat32), make_tensor(wv, Shape{16}, DType::kFloat32), 1e-6);
  expect_close(y, rms_norm_ref(xv, wv, 1e-6), Tol{1e-5, 1e-5});
}

TEST(RmsNorm, BadShapesAreTypedErrors) {
  const Tensor x = zeros({2, 4});
  try {
    rms_norm(x, zeros({5}), 1e-6);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kShape);
    EXPECT_NE(std::string(e.what()).find("weight"), std::string::npos) << e.what();
  }
  EXPECT_THROW(rms_norm(zeros({2, 4}, DType::kInt64), zeros({4}), 1e-6), Error);
  EXPECT_THROW(rms_norm(x, zeros({4}), -1), Error);
}

// ---- rope -----------------------------------------------------------------------------------
// x as [outer, S, inner, D] around the sequence axis.
std::vector<double> rope_ref(const std::vector<double>& x, int64_t outer, int64_t S, int64_t inner, int64_t D,
                             const std::vector<int64_t>& pos, const std::vector<float>& freq, bool interleaved,
                             double scale) {
  std::vector<double> y = x;
  const int64_t nf = (int64_t)freq.size();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t h = 0; h < inner; ++h) {
        const int64_t base = ((o * S + s) * inner + h) * D;
        for (int64_t i = 0; i < nf; ++i) {
          const double angle = (double)((float)pos[s] * freq[i]);  // float32 product, as HF
          const int64_t a = interleaved ? base + 2 * i : base + i, b = interleaved ? a + 1 : a + nf;
          y[a] = scale * (x[a] * std::cos(angle) - x[b] * std::sin(angle));
          y[b] = scale * (x[b] * std::cos(angle) + x[a] * std::sin(angle));
        }
      }
  return y;
}

std::vector<float> inv_freq(int64_t rot, double theta) {
  std::vector<float> f((size_t)(rot / 2));
  for (int64_t i = 0; i < rot / 2; ++i) f[i] = (float)(1.0 / std::pow(theta, (double)(2 * i) / (double)rot));
  return f;
}

TEST(Rope, HalfSplitAndInterleavedMatchFloat64) {
  at_every_level([] {
    const std::vector<int64_t> pos{0, 1, 7, 300, 4095};
    for (bool interleaved : {false, true}) {
      for (int64_t rot : {32, 16}) {  // full and partial rotary (the rest passes through)
        SCOPED_TRACE(std::string(interleaved ? "interleaved" : "half-split") + " rot " + std::to_string(rot));
        const auto xv = random_values(2 * 3 * 5 * 32, DType::kFloat32, -2, 2, 5);
        const auto f = inv_freq(rot, 10000);
        const Tensor x = make_tensor(xv, Shape{2, 3, 5, 32}, DType::kFloat32);  // [B, H, S, D]
        RopeOptions o;
        o.interleaved = interleaved;
        o.scale = 1.25;
        const Tensor y = rope(x, Tensor::from_vector(pos), Tensor::from_vector(f), o);
        expect_close(y, rope_ref(xv, 6, 5, 1, 32, pos, f, interleaved, 1.25), Tol{1e-5, 1e-5});
      }
    }
  });
}

TEST(Rope, SequenceAxisBeforeTheHeads) {
  // [B, S, H, D] (the projection's layout before any transpose), float64 and bfloat16.
  const std::vector<int64_t> pos{3, 4, 5};
  const auto f = inv_freq(8, 500000);
  for (DType t : {DType::kFloat64, DType::kBFloat16}) {
    const auto xv = random_values(2 * 3 * 4 * 8, t, -2, 2, 6);
    RopeOptions o;
    o.seq_axis = -3;
    const Tensor y = rope(make_tensor(xv, Shape{2, 3, 4, 8}, t), Tensor::from_vector(pos), Tensor::from_vector(f), o);
    Tol tol = t == DType::kFloat64 ? Tol{1e-7, 1e-7} : Tol{2e-2, 2e-2};  // cos/sin rounded once to float
    expect_close(y, rope_ref(xv, 2, 3, 4, 8, pos, f, false, 1.0), tol);
  }
}

TEST(Rope, InverseUndoesTheRotation) {
  const auto xv = random_values(4 * 64, DType::kFloat64, -2, 2, 7);
  const Tensor x = make_tensor(xv, Shape{1, 1, 4, 64}, DType::kFloat64);
  const Tensor pos = Tensor::from_vector<int64_t>({10, 20, 30, 40}), f = Tensor::from_vector(inv_freq(64, 10000));
  RopeOptions back;
  back.inverse = true;
  expect_close(rope(rope(x, pos, f), pos, f, back), xv, Tol{1e-7, 1e-7});
}

TEST(Rope, BadInputsAreTypedErrors) {
  const Tensor x = zeros({1, 2, 3, 8});
  const Tensor f = Tensor::from_vector<float>({1, 0.5f});
  EXPECT_THROW(rope(x, Tensor::from_vector<int64_t>({0, 1}), f), Error);  // 2 positions for 3 steps
  EXPECT_THROW(rope(x, Tensor::from_vector<int64_t>({0, 1, 2}), zeros({5})), Error);  // 10 rotary features > 8
  EXPECT_THROW(rope(x, Tensor::from_vector<int64_t>({0, 1, 2}), zeros({2}, DType::kFloat64)), Error);
  RopeOptions o;
  o.seq_axis = -1;
  EXPECT_THROW(rope(x, Tensor::from_vector<int64_t>({0, 1, 2, 3, 4, 5, 6, 7}), f, o), Error);
}

// ---- attention ------------------------------------------------------------------------------
// Naive causal attention in float64: q [B, Hq, S, D], k [B, Hkv, T, D], v [B, Hkv, T, Dv].
std::vector<double> attention_ref(const std::vector<double>& q, const std::vector<double>& k,
                                  const std::vector<double>& v, int64_t B, int64_t Hq, int64_t Hkv, int64_t S,
                                  int64_t T, int64_t D, int64_t Dv, double scale, int64_t past) {
  std::vector<double> out((size_t)(B * Hq * S * Dv));
  const int64_t G = Hq / Hkv;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t i = 0; i < S; ++i) {
        const int64_t hk = h / G, n = past + i + 1;
        std::vector<double> s((size_t)n);
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < n; ++j) {
          double dot = 0;
          for (int64_t t = 0; t < D; ++t) dot += q[((b * Hq + h) * S + i) * D + t] * k[((b * Hkv + hk) * T + j) * D + t];
          s[j] = dot * scale;
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (auto& e : s) sum += (e = std::exp(e - mx));
        for (int64_t t = 0; t < Dv; ++t) {
          double acc = 0;
          for (int64_t j = 0; j < n; ++j) acc += s[j] * v[((b * Hkv + hk) * T + j) * Dv + t];
          out[((b * Hq + h) * S + i) * Dv + t] = acc / sum;
        }
      }
  return out;
}

struct AttnCase {
  int64_t B, Hq, Hkv, S, T, D, Dv, past;
};

void check_attention(const AttnCase& c, DType kv_dtype, Tol tol) {
  SCOPED_TRACE("S " + std::to_string(c.S) + " T " + std::to_string(c.T) + " past " + std::to_string(c.past) + " kv " +
               dtype_name(kv_dtype));
  const auto qv = random_values(c.B * c.Hq * c.S * c.D, DType::kFloat32, -1.5, 1.5, 11);
  const auto kv = random_values(c.B * c.Hkv * c.T * c.D, kv_dtype, -1.5, 1.5, 12);
  const auto vv = random_values(c.B * c.Hkv * c.T * c.Dv, kv_dtype, -2, 2, 13);
  const double scale = 1 / std::sqrt((double)c.D);
  const Tensor y = attention(make_tensor(qv, Shape{c.B, c.Hq, c.S, c.D}, DType::kFloat32),
                             make_tensor(kv, Shape{c.B, c.Hkv, c.T, c.D}, kv_dtype),
                             make_tensor(vv, Shape{c.B, c.Hkv, c.T, c.Dv}, kv_dtype), 0, c.past);
  ASSERT_EQ(y.shape(), (Shape{c.B, c.Hq, c.S, c.Dv}));
  expect_close(y, attention_ref(qv, kv, vv, c.B, c.Hq, c.Hkv, c.S, c.T, c.D, c.Dv, scale, c.past), tol);
}

TEST(Attention, PrefillDecodeAndGroupedHeadsMatchFloat64) {
  at_every_level([] {
    const Tol tol{2e-5, 2e-5};
    check_attention({1, 2, 2, 7, 7, 16, 16, 0}, DType::kFloat32, tol);       // plain causal prefill
    check_attention({2, 8, 2, 40, 100, 32, 24, 3}, DType::kFloat32, tol);    // GQA 4:1, past, spare cache rows, Dv != D
    check_attention({1, 14, 2, 1, 200, 64, 64, 150}, DType::kFloat32, tol);  // decode: one query, 7 heads per kv head
    check_attention({1, 6, 3, 20, 130, 16, 16, 110}, DType::kFloat32, tol);  // several key tiles and query blocks
    check_attention({1, 4, 1, 3, 70, 32, 32, 66}, DType::kFloat16, tol);     // a float16 cache (MQA)
    check_attention({1, 4, 2, 1, 9, 8, 8, 8}, DType::kBFloat16, tol);        // a bfloat16 cache
  });
}

TEST(Attention, Float64MatchesToRounding) {
  const AttnCase c{1, 4, 2, 5, 9, 8, 8, 4};
  const auto qv = random_values(c.B * c.Hq * c.S * c.D, DType::kFloat64, -1, 1, 21);
  const auto kv = random_values(c.B * c.Hkv * c.T * c.D, DType::kFloat64, -1, 1, 22);
  const auto vv = random_values(c.B * c.Hkv * c.T * c.Dv, DType::kFloat64, -1, 1, 23);
  const Tensor y = attention(make_tensor(qv, Shape{1, 4, 5, 8}, DType::kFloat64), make_tensor(kv, Shape{1, 2, 9, 8}, DType::kFloat64),
                             make_tensor(vv, Shape{1, 2, 9, 8}, DType::kFloat64), 0.3, 4);
  expect_close(y, attention_ref(qv, kv, vv, 1, 4, 2, 5, 9, 8, 8, 0.3, 4), Tol{1e-12, 1e-12});
}

TEST(Attention, BadShapesAreTypedErrors) {
  const Tensor q = zeros({1, 6, 2, 8});
  EXPECT_EQ(error_code_of([&] { attention(q, zeros({1, 4, 5, 8}), zeros({1, 4, 5, 8})); }), ErrorCode::kShape);  // 4 ∤ 6
  EXPECT_EQ(error_code_of([&] { attention(q, zeros({1, 3, 5, 8}), zeros({1, 3, 5, 8}), 0, 4); }), ErrorCode::kShape);  // 4 + 2 > 5
  EXPECT_EQ(error_code_of([&] { attention(q, zeros({1, 3, 5, 4}), zeros({1, 3, 5, 8})); }), ErrorCode::kShape);  // D differs
  EXPECT_EQ(error_code_of([&] { attention(q, zeros({1, 3, 5, 8}, DType::kInt32), zeros({1, 3, 5, 8})); }), ErrorCode::kDType);
  EXPECT_EQ(error_code_of([&] { attention(zeros({6, 2, 8}), zeros({3, 5, 8}), zeros({3, 5, 8})); }), ErrorCode::kShape);
}

// The engine's flow: prefill writes S rows into a float16 cache, each decode step writes one row
// and attends with past = its position; every step equals full causal attention over the
// sequence so far (float64 reference on the float16-rounded keys and values).
TEST(Attention, PrefillThenDecodeThroughAFloat16Cache) {
  const int64_t Hq = 4, Hkv = 2, D = 16, T = 12, S = 5;
  const Tensor kc = zeros({1, Hkv, T, D}, DType::kFloat16), vc = zeros({1, Hkv, T, D}, DType::kFloat16);
  const auto qv = random_values(Hq * T * D, DType::kFloat32, -1, 1, 71);
  const auto kv = random_values(Hkv * T * D, DType::kFloat16, -1, 1, 72);  // exact in float16
  const auto vv = random_values(Hkv * T * D, DType::kFloat16, -1, 1, 73);
  // Rows [s0, s1) of a [1, H, T, D] buffer as a [1, H, s1 - s0, D] tensor.
  auto rows = [&](const std::vector<double>& buf, int64_t h, int64_t s0, int64_t s1) {
    std::vector<double> out;
    for (int64_t i = 0; i < h; ++i)
      out.insert(out.end(), buf.begin() + (i * T + s0) * D, buf.begin() + (i * T + s1) * D);
    return out;
  };
  for (int64_t pos = 0; pos < T;) {
    const int64_t n = pos == 0 ? S : 1;  // prefill, then one token a step
    SCOPED_TRACE("position " + std::to_string(pos));
    kv_cache_write(kc, make_tensor(rows(kv, Hkv, pos, pos + n), Shape{1, Hkv, n, D}, DType::kFloat32), pos);
    kv_cache_write(vc, make_tensor(rows(vv, Hkv, pos, pos + n), Shape{1, Hkv, n, D}, DType::kFloat32), pos);
    const auto q = rows(qv, Hq, pos, pos + n);
    const Tensor y = attention(make_tensor(q, Shape{1, Hq, n, D}, DType::kFloat32), kc, vc, 0, pos);
    expect_close(y,
                 attention_ref(q, rows(kv, Hkv, 0, pos + n), rows(vv, Hkv, 0, pos + n), 1, Hq, Hkv, n, pos + n, D, D,
                               1 / std::sqrt((double)D), pos),
                 Tol{2e-5, 2e-5});
    pos += n;
  }
}

// ---- kv_cache_write -------------------------------------------------------------------------
TEST(KvCacheWrite, WritesRowsInPlaceAndLeavesTheRest) {
  at_every_level([] {
    for (DType ct : {DType::kFloat16, DType::kBFloat16, DType::kFloat32}) {
      SCOPED_TRACE(dtype_name(ct));
      const auto before = random_values(2 * 3 * 6 * 8, ct, -1, 1, 31);
      const Tensor cache = make_tensor(before, Shape{2, 3, 6, 8}, ct);
      const void* storage = cache.data_ptr();
      const auto nv = random_values(2 * 3 * 2 * 8, ct, -4, 4, 32);  // exact in the cache dtype
      kv_cache_write(cache, make_tensor(nv, Shape{2, 3, 2, 8}, DType::kFloat32), 3);
      EXPECT_EQ(cache.data_ptr(), storage);
      std::vector<double> want = before;
      for (int64_t bh = 0; bh < 6; ++bh)
        for (int64_t s = 0; s < 2; ++s)
          for (int64_t t = 0; t < 8; ++t) want[(size_t)((bh * 6 + 3 + s) * 8 + t)] = nv[(size_t)((bh * 2 + s) * 8 + t)];
      expect_close(cache, want, Tol{0, 0});
    }
  });
}

TEST(KvCacheWrite, RowsPastTheEndAndWrongDtypesAreTypedErrors) {
  const Tensor cache = zeros({1, 2, 4, 8}, DType::kFloat16);
  try {
    kv_cache_write(cache, zeros({1, 2, 2, 8}), 3);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kShape);
    EXPECT_NE(std::string(e.what()).find("do not fit"), std::string::npos) << e.what();
  }
  EXPECT_THROW(kv_cache_write(cache, zeros({1, 2, 1, 8}, DType::kFloat64), 0), Error);
  EXPECT_THROW(kv_cache_write(cache, zeros({1, 3, 1, 8}), 0), Error);
  EXPECT_THROW(kv_cache_write(transpose(zeros({1, 2, 8, 4}), 2, 3), zeros({1, 2, 1, 8}), 0), Error);  // not contiguous
}

}  // namespace
}  // namespace spore::test
