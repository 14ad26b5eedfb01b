// dynamic_quant_matmul (NOTE [Dynamic int8 products]) against the ONNX definitions written out here
// once more: DynamicQuantizeLinear's scale and zero point in float32, the quantized values, the
// integer sums in int64 and one float product with x_scale * w_scale[j]. The op's own helpers are
// not used for the reference. Shapes from one value to a BERT-base projection.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "spore/context.h"
#include "spore/int8.h"
#include "spore/ops.h"
#include "test_util.h"

namespace spore {
namespace {

using test::expect_error;

// ONNX DynamicQuantizeLinear, as its specification writes it.
std::vector<int64_t> onnx_dynamic_quantize(const std::vector<float>& x, float& scale, int64_t& zero_point) {
  float lo = 0, hi = 0;
  for (float v : x) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  scale = (hi - lo) / 255.0f;
  std::vector<int64_t> q(x.size(), 0);
  zero_point = 0;
  if (scale == 0) return q;
  zero_point = (int64_t)std::clamp(std::nearbyint((0.0f - lo) / scale), 0.0f, 255.0f);
  for (size_t i = 0; i < x.size(); ++i)
    q[i] = (int64_t)std::clamp(std::nearbyint(x[i] / scale) + (float)zero_point, 0.0f, 255.0f);
  return q;
}

std::vector<float> reference(const std::vector<float>& x, const std::vector<int8_t>& w, const std::vector<float>& ws,
                             int64_t m, int64_t k, int64_t n) {
  float xs;
  int64_t zp;
  const std::vector<int64_t> q = onnx_dynamic_quantize(x, xs, zp);
  std::vector<float> y((size_t)(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int64_t acc = 0;
      for (int64_t p = 0; p < k; ++p) acc += (q[(size_t)(i * k + p)] - zp) * (int64_t)w[(size_t)(p * n + j)];
      const float s = xs * ws[ws.size() == 1 ? 0 : (size_t)j];
      y[(size_t)(i * n + j)] = s * (float)acc;
    }
  return y;
}

void expect_sums(const std::vector<float>& got, const std::vector<float>& want, int64_t k);

// sealed: the weight's storage is read-only, so the kernel packs it once into oneDNN's layout
// and keeps that (NOTE [Packed int8 weights]); the product runs twice, the second on the kept form.
void check(int64_t m, int64_t k, int64_t n, float lo, float hi, bool one_scale, int threads, uint32_t seed,
           bool sealed = false) {
  SCOPED_TRACE(::testing::Message() << m << "x" << k << "x" << n << " x in [" << lo << ", " << hi << "], threads "
                                    << threads << (sealed ? ", sealed weight" : ""));
  ContextScope scope([&] {
    ContextSettings s = context();
    s.num_threads = threads;
    return s;
  }());
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> xd(lo, hi);
  std::uniform_int_distribution<int> wd(-127, 127);
  std::uniform_real_distribution<float> sd(0.001f, 0.05f);
  std::vector<float> x((size_t)(m * k)), ws(one_scale ? 1 : (size_t)n);
  std::vector<int8_t> w((size_t)(k * n));
  for (float& v : x) v = xd(g);
  for (int8_t& v : w) v = (int8_t)wd(g);
  for (float& v : ws) v = sd(g);
  const Tensor wt = Tensor::from_vector(w, Shape{k, n});
  if (sealed) wt.storage()->make_read_only();
  const std::vector<float> want = reference(x, w, ws, m, k, n);
  for (int run = 0; run < (sealed ? 2 : 1); ++run) {
    const Tensor y = dynamic_quant_matmul(Tensor::from_vector(x, Shape{m, k}), wt,
                                          Tensor::from_vector(ws, Shape{(int64_t)ws.size()}));
    ASSERT_EQ(y.shape(), (Shape{m, n}));
    ASSERT_EQ(y.dtype(), DType::kFloat32);
    expect_sums(y.to_vector<float>(), want, k);
  }
}

void expect_sums(const std::vector<float>& got, const std::vector<float>& want, int64_t k) {
  double worst = 0, scale = 1e-30;
  for (size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, (double)std::fabs(got[i] - want[i]));
    scale = std::max(scale, (double)std::fabs(want[i]));
  }
  // The sums are exact integers; below 2^24 their float conversion is exact too, so the one
  // rounding is the scale product, the same on both sides.
  if (255.0 * 127.0 * (double)k < 16777216.0) EXPECT_EQ(worst, 0.0) << "largest |y| " << scale;
  else EXPECT_LE(worst / scale, 1e-6);
}

TEST(DynamicQuantMatmul, EqualsOnnxDefinitionAtEveryShape) {
  check(1, 1, 1, -1, 1, false, 1, 1);
  check(3, 5, 7, -2, 3, false, 1, 2);
  check(17, 64, 33, -0.5f, 4, true, 2, 3);
  check(2, 300, 5, 0.25f, 1, false, 1, 4);     // positive only: the range still holds 0
  check(4, 40, 9, -3, -0.5f, false, 2, 5);     // negative only: zero point 255
  check(128, 768, 96, -4, 4, false, 2, 6);     // a BERT-base projection's rows
  check(9, 4096, 16, -1, 1, false, 1, 7);      // sums past 2^24
  check(2, 70001, 3, -1, 1, false, 1, 8);      // rows longer than the int16-pair path's int32 sums hold
  check(32, 256, 300, -2, 2, false, 2, 9);     // two threads, columns cut into pool slabs (256 + 44)
  check(20, 512, 1030, -1, 3, true, 2, 10);    // one scale, an odd width
}

TEST(DynamicQuantMatmul, SealedWeightsGiveTheSameSums) {
  check(1, 512, 2048, -1, 1, false, 1, 11, true);   // an LSTM step's product: one row
  check(1, 512, 2048, -1, 1, false, 2, 12, true);   // the same cut into pool slabs
  check(20, 512, 1030, -2, 3, true, 2, 13, true);   // an odd width over two slabs
  check(128, 768, 96, -4, 4, false, 1, 14, true);   // a BERT-base projection's rows
  check(9, 4096, 16, -1, 1, false, 2, 15, true);    // sums past 2^24
}

// Two weights in one sealed storage (an LSTM's directions): each view keeps its own packed form.
TEST(DynamicQuantMatmul, ViewsOfOneSealedStorageKeepTheirOwnForms) {
  const int64_t m = 3, k = 64, n = 80;
  std::mt19937 g(21);
  std::uniform_real_distribution<float> xd(-1, 1);
  std::uniform_int_distribution<int> wd(-127, 127);
  std::vector<float> x((size_t)(m * k)), ws{0.01f};
  std::vector<int8_t> w((size_t)(2 * k * n));
  for (float& v : x) v = xd(g);
  for (int8_t& v : w) v = (int8_t)wd(g);
  const Tensor both = Tensor::from_vector(w, Shape{2, k, n});
  both.storage()->make_read_only();
  for (int round = 0; round < 2; ++round)
    for (int64_t d = 0; d < 2; ++d) {
      SCOPED_TRACE(::testing::Message() << "direction " << d << ", round " << round);
      const std::vector<int8_t> wd_part(w.begin() + d * k * n, w.begin() + (d + 1) * k * n);
      const Tensor y = dynamic_quant_matmul(Tensor::from_vector(x, Shape{m, k}), reshape(slice(both, 0, d, d + 1), {k, n}), Tensor::from_vector(ws, Shape{1}));
      ASSERT_TRUE(reshape(slice(both, 0, d, d + 1), {k, n}).same_storage(both));  // a view, as the test means
      expect_sums(y.to_vector<float>(), reference(x, wd_part, ws, m, k, n), k);
    }
}

TEST(DynamicQuantMatmul, AllZeroActivationsGiveZeros) {
  const Tensor y = dynamic_quant_matmul(zeros({2, 8}), Tensor::from_vector<int8_t>(std::vector<int8_t>(8 * 3, 5), Shape{8, 3}),
                                        Tensor::from_vector<float>({0.5f, 1.0f, 2.0f}, Shape{3}));
  for (float v : y.to_vector<float>()) EXPECT_EQ(v, 0.0f);
}

TEST(DynamicQuantMatmul, RefusesBadInputsByName) {
  const Tensor w = Tensor::from_vector<int8_t>(std::vector<int8_t>(4 * 3, 1), Shape{4, 3});
  const Tensor s = ones({3});
  expect_error([&] { dynamic_quant_matmul(ones({2, 5}), w, s); }, ErrorCode::kShape, "dynamic_quant_matmul", "k differs");
  expect_error([&] { dynamic_quant_matmul(ones({2, 4}), w.to(DType::kFloat32), s); }, ErrorCode::kDType, "int8");
  expect_error([&] { dynamic_quant_matmul(ones({2, 4}), w, ones({2})); }, ErrorCode::kShape, "scale");
  expect_error([&] { dynamic_quant_matmul(ones({2, 2, 4}), w, s); }, ErrorCode::kDType, "[m, k]");
  Tensor x = ones({2, 4});
  x.data<float>()[3] = std::numeric_limits<float>::quiet_NaN();
  expect_error([&] { dynamic_quant_matmul(x, w, s); }, ErrorCode::kValue, "not finite");
  x.data<float>()[3] = std::numeric_limits<float>::infinity();
  expect_error([&] { dynamic_quant_matmul(x, w, s); }, ErrorCode::kValue, "not finite");
}

// The weight rule, written out: per column, scale = max|w| / 127 and q = round half to even.
TEST(DynamicQuantMatmul, WeightsQuantizePerColumnSymmetrically) {
  const std::vector<float> v = {1.27f, -0.5f, 0.0f, 0.005f, -2.54f, 0.0f, 0.635f, 1.0f, 0.0f};  // [3, 3]
  const Int8Weight q = quantize_weight_per_column(Tensor::from_vector(v, Shape{3, 3}));
  const std::vector<float> s = q.scale.to_vector<float>();
  EXPECT_FLOAT_EQ(s[0], 1.27f / 127);
  EXPECT_FLOAT_EQ(s[1], 2.54f / 127);
  EXPECT_EQ(s[2], 1.0f);  // an all-zero column
  const std::vector<int8_t> w = q.q.to_vector<int8_t>();
  EXPECT_EQ(w[0], 127);
  EXPECT_EQ(w[3], 0);  // 0.005 / 0.01 = 0.5: half to even
  EXPECT_EQ(w[4], -127);
  EXPECT_EQ(w[6], 64);  // 0.635 / 0.01 = 63.5: half to even
  EXPECT_EQ(w[1], -25);
  expect_error([&] { quantize_weight_per_column(ones({2, 2, 2})); }, ErrorCode::kShape, "[k, n]");
}

// integer_matmul (NOTE [Integer products]) against int64 sums of (a - zp) * (w + offset[j]).
void check_integer(int64_t m, int64_t k, int64_t n, int32_t zp, bool one_offset, int threads, uint32_t seed, bool sealed) {
  SCOPED_TRACE(::testing::Message() << m << "x" << k << "x" << n << " zp " << zp << ", threads " << threads
                                    << (sealed ? ", sealed weight" : ""));
  ContextScope scope([&] {
    ContextSettings s = context();
    s.num_threads = threads;
    return s;
  }());
  std::mt19937 g(seed);
  std::uniform_int_distribution<int> ad(0, 255), wd(-128, 127), od(-128, 128);
  std::vector<uint8_t> a((size_t)(m * k));
  std::vector<int8_t> w((size_t)(k * n));
  std::vector<int32_t> off(one_offset ? 1 : (size_t)n);
  for (uint8_t& v : a) v = (uint8_t)ad(g);
  for (int8_t& v : w) v = (int8_t)wd(g);
  for (int32_t& v : off) v = od(g);
  if (k > 0) {  // the corners: a row of 255s against a column of -128s and the largest offset
    for (int64_t p = 0; p < k; ++p) a[(size_t)p] = 255, w[(size_t)(p * n)] = -128;
    off[0] = -128;
  }
  const Tensor wt = Tensor::from_vector(w, Shape{k, n});
  if (sealed) wt.storage()->make_read_only();
  for (int run = 0; run < (sealed ? 2 : 1); ++run) {
    const Tensor y = integer_matmul(Tensor::from_vector(a, Shape{m, k}), Tensor::from_vector<int32_t>({zp}, Shape{}), wt,
                                    Tensor::from_vector(off, Shape{(int64_t)off.size()}));
    ASSERT_EQ(y.shape(), (Shape{m, n}));
    ASSERT_EQ(y.dtype(), DType::kInt32);
    const std::vector<int32_t> got = y.to_vector<int32_t>();
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        int64_t want = 0;
        for (int64_t p = 0; p < k; ++p)
          want += ((int64_t)a[(size_t)(i * k + p)] - zp) * ((int64_t)w[(size_t)(p * n + j)] + off[one_offset ? 0 : (size_t)j]);
        ASSERT_EQ(got[(size_t)(i * n + j)], want) << "[" << i << ", " << j << "]";
      }
  }
}

TEST(IntegerMatmul, EqualsInt64SumsAtEveryShape) {
  check_integer(1, 1, 1, 0, true, 1, 1, false);
  check_integer(3, 5, 7, 128, false, 1, 2, false);
  check_integer(20, 1024, 300, 77, false, 2, 3, false);  // ddddocr's classifier, narrower; two slabs
  check_integer(20, 1024, 300, 77, false, 2, 3, true);
  check_integer(1, 512, 2048, 0, true, 1, 4, true);
  check_integer(4, 32768, 3, 255, false, 1, 5, false);   // the largest k: sums near int32's edge
  check_integer(4, 32768, 3, 0, false, 1, 6, true);
}

TEST(IntegerMatmul, RefusesBadInputsByName) {
  const Tensor a = Tensor::from_vector<uint8_t>({1, 2, 3, 4}, Shape{2, 2});
  const Tensor zp = Tensor::from_vector<int32_t>({0}, Shape{});
  const Tensor w = Tensor::from_vector<int8_t>({1, 2, 3, 4}, Shape{2, 2});
  const Tensor off = Tensor::from_vector<int32_t>({0, 0}, Shape{2});
  expect_error([&] { integer_matmul(a, Tensor::from_vector<int32_t>({300}, Shape{}), w, off); }, ErrorCode::kValue, "zero point 300");
  expect_error([&] { integer_matmul(a, zp, w, Tensor::from_vector<int32_t>({0, 129}, Shape{2})); }, ErrorCode::kValue,
               "offset 129 at column 1");
  expect_error([&] { integer_matmul(w, zp, w, off); }, ErrorCode::kDType, "integer_matmul", "must be uint8");
  expect_error([&] {
    integer_matmul(zeros({1, kIntegerMatmulMaxK + 1}, DType::kUInt8), zp, zeros({kIntegerMatmulMaxK + 1, 2}, DType::kInt8), off);
  }, ErrorCode::kShape, "past which a sum can leave int32");
}

}  // namespace
}  // namespace spore
