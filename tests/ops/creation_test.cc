// Creation ops: fill (full/zeros/ones/_like), arange, random_uniform, random_normal. The Philox
// generator is checked against the Random123 known-answer vectors; the distributions against
// their moments; reproducibility across thread counts and seeds.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "backends/cpu/creation_philox.h"
#include "spore/context.h"
#include "spore/op_registry.h"
#include "spore/ops.h"
#include "test_util.h"

namespace spore {
namespace {

using test::expect_error;

constexpr DType kFloatDTypes[] = {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64};

// ---- Philox ---------------------------------------------------------------------------------
TEST(CreationPhilox, Random123KnownAnswers) {
  using cpu::philox4x32_10;
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}),
            (cpu::PhiloxBlock{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(philox4x32_10({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu}),
            (cpu::PhiloxBlock{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(philox4x32_10({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u}),
            (cpu::PhiloxBlock{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

// ---- fill -----------------------------------------------------------------------------------
TEST(CreationFill, EveryDType) {
  for (DType t : kAllDTypes) {
    SCOPED_TRACE(dtype_name(t));
    Tensor x = full({2, 3}, 2.75, t);
    EXPECT_EQ(x.shape(), (Shape{2, 3}));
    EXPECT_EQ(x.dtype(), t);
    // Like cast: integers truncate toward zero, bool is value != 0; 2.75 is exact in every float.
    const double want = t == DType::kBool ? 1 : is_floating(t) ? 2.75 : 2;
    test::expect_close(x, std::vector<double>(6, want));
    test::expect_close(zeros({4}, t), std::vector<double>(4, 0));
    test::expect_close(ones({1, 2}, t), std::vector<double>(2, 1));
    Tensor like = zeros_like(x);
    EXPECT_EQ(like.shape(), x.shape());
    EXPECT_EQ(like.dtype(), t);
    test::expect_close(ones_like(x), std::vector<double>(6, 1));
  }
  test::expect_close(full({3}, -7.9, DType::kInt8), {-7, -7, -7});
  EXPECT_EQ(full({}, 5, DType::kInt64, Device::cpu()).item<int64_t>(), 5);
  EXPECT_EQ(full({0, 4}, 1).numel(), 0);
  EXPECT_TRUE(std::isinf(full({1}, 1e6, DType::kFloat16).item<float>()));
  EXPECT_TRUE(std::isnan(full({1}, std::nan(""), DType::kBFloat16).item<float>()));
  // Large enough for the pool.
  Tensor big = full({1 << 18}, 3, DType::kFloat32);
  std::vector<float> bv = big.to_vector<float>();
  EXPECT_EQ(std::count(bv.begin(), bv.end(), 3.f), 1 << 18);
}

TEST(CreationFill, Errors) {
  expect_error([] { full({2, -1}, 0); }, ErrorCode::kValue, "fill");
  expect_error([] { full({1, 1, 1, 1, 1, 1, 1, 1, 1}, 0); }, ErrorCode::kShape, "fill");
  expect_error([] { full({2}, 300, DType::kInt8); }, ErrorCode::kValue, "fill");
  expect_error([] { full({2}, -1, DType::kUInt8); }, ErrorCode::kValue, "fill");
  expect_error([] { full({2}, std::nan(""), DType::kInt32); }, ErrorCode::kValue, "fill");
  expect_error([] { full({2}, 1e19, DType::kInt64); }, ErrorCode::kValue, "fill");
}

// ---- arange ---------------------------------------------------------------------------------
TEST(CreationArange, ValuesAndLengths) {
  Tensor a = arange(0, 10, 3);
  EXPECT_EQ(a.dtype(), DType::kInt64);
  EXPECT_EQ(a.to_vector<int64_t>(), (std::vector<int64_t>{0, 3, 6, 9}));
  for (DType t : kAllDTypes) {
    if (t == DType::kBool) continue;
    SCOPED_TRACE(dtype_name(t));
    Tensor x = arange(5, 0, -1.5, t);  // 5, 3.5, 2, 0.5: integers truncate
    std::vector<double> ref;
    for (int i = 0; i < 4; ++i) ref.push_back(is_floating(t) ? 5 - 1.5 * i : std::trunc(5 - 1.5 * i));
    test::expect_close(x, ref);
  }
  Tensor f = arange(0, 1, 0.1, DType::kFloat64);
  ASSERT_EQ(f.numel(), 10);
  std::vector<double> fv = f.to_vector<double>();
  for (int i = 0; i < 10; ++i) EXPECT_EQ(fv[(size_t)i], 0.1 * i);
  EXPECT_EQ(arange(3, 3).numel(), 0);
  EXPECT_EQ(arange(3, 1).numel(), 0);
  EXPECT_EQ(arange(-2, 2, 1, DType::kInt8).to_vector<int8_t>(), (std::vector<int8_t>{-2, -1, 0, 1}));
  EXPECT_EQ(arange(0, 100000, 1, DType::kInt32).to_vector<int32_t>()[99999], 99999);
}

TEST(CreationArange, Errors) {
  expect_error([] { arange(0, 10, 0); }, ErrorCode::kValue, "arange");
  expect_error([] { arange(0, std::numeric_limits<double>::infinity()); }, ErrorCode::kValue, "arange");
  expect_error([] { arange(0, 1e300, 1e-10); }, ErrorCode::kValue, "arange");
  expect_error([] { arange(0, 200, 1, DType::kInt8); }, ErrorCode::kValue, "arange");
  expect_error([] { arange(0, 2, 1, DType::kBool); }, ErrorCode::kDType, "arange");
}

// ---- random ---------------------------------------------------------------------------------
struct Moments {
  double mean = 0, var = 0;
};
Moments moments(const std::vector<double>& v) {
  Moments m;
  for (double x : v) m.mean += x;
  m.mean /= (double)v.size();
  for (double x : v) m.var += (x - m.mean) * (x - m.mean);
  m.var /= (double)(v.size() - 1);
  return m;
}

TEST(CreationRandom, UniformRangeAndMoments) {
  const int64_t n = 100000;
  for (DType t : kFloatDTypes) {
    SCOPED_TRACE(dtype_name(t));
    const double low = -2, high = 3;
    std::vector<double> v = random_uniform({n}, 42, low, high, t).to_vector<double>();
    for (double x : v) ASSERT_TRUE(x >= low && x < high) << x;
    Moments m = moments(v);
    // Uniform: mean (l+h)/2, variance (h-l)^2/12; standard error of the mean sqrt(var/n).
    const double var = (high - low) * (high - low) / 12;
    EXPECT_NEAR(m.mean, (low + high) / 2, 5 * std::sqrt(var / n));
    EXPECT_NEAR(m.var, var, 0.02 * var);
    // Every tenth of the range gets its share (within 5 standard errors of a binomial).
    std::vector<int> bins(10, 0);
    for (double x : v) ++bins[(size_t)std::min(9.0, std::floor((x - low) / (high - low) * 10))];
    for (int b : bins) EXPECT_NEAR(b, n / 10.0, 5 * std::sqrt(n * 0.1 * 0.9));
  }
}

TEST(CreationRandom, UniformNeverReturnsHigh) {
  // float16 above 1024 has spacing 1: most samples of [1024, 1026) round to 1026 = high unless clamped.
  for (DType t : kFloatDTypes) {
    SCOPED_TRACE(dtype_name(t));
    std::vector<double> v = random_uniform({20000}, 3, 1024, 1026, t).to_vector<double>();
    for (double x : v) ASSERT_TRUE(x >= 1024 && x < 1026) << x;
    std::vector<double> unit = random_uniform({20000}, 4, 0, 1, t).to_vector<double>();
    for (double x : unit) ASSERT_TRUE(x >= 0 && x < 1) << x;
  }
  // A range holding exactly one float16 value gives only that value.
  std::vector<double> one = random_uniform({1000}, 5, 1.0, 1.0009765625, DType::kFloat16).to_vector<double>();
  for (double x : one) ASSERT_EQ(x, 1.0);
  // low not representable: results start at the next float16 above it.
  std::vector<double> up = random_uniform({1000}, 6, 1.0001, 1.01, DType::kFloat16).to_vector<double>();
  for (double x : up) ASSERT_TRUE(x >= 1.0001 && x < 1.01) << x;
}

TEST(CreationRandom, NormalMoments) {
  const int64_t n = 100000;
  for (DType t : kFloatDTypes) {
    SCOPED_TRACE(dtype_name(t));
    const double mean = 1.5, stddev = 2;
    std::vector<double> v = random_normal({n}, 7, mean, stddev, t).to_vector<double>();
    Moments m = moments(v);
    EXPECT_NEAR(m.mean, mean, 5 * stddev / std::sqrt((double)n));
    // The standard error of the sample variance of a normal is var * sqrt(2 / (n - 1)).
    EXPECT_NEAR(m.var, stddev * stddev, 5 * stddev * stddev * std::sqrt(2.0 / n) + 0.01);
    int64_t within1 = 0, within2 = 0;
    for (double x : v) {
      within1 += std::abs(x - mean) < stddev;
      within2 += std::abs(x - mean) < 2 * stddev;
    }
    EXPECT_NEAR(within1 / (double)n, 0.682689, 0.01);
    EXPECT_NEAR(within2 / (double)n, 0.954500, 0.01);
  }
  test::expect_close(random_normal({5}, 1, 3, 0), std::vector<double>(5, 3));
}

TEST(CreationRandom, ReproducibleAcrossThreadsAndShapes) {
  for (DType t : kFloatDTypes) {
    SCOPED_TRACE(dtype_name(t));
    std::vector<Tensor> u, g;
    for (int threads : {1, 2}) {
      ContextGuard guard;
      set_num_threads(threads);
      u.push_back(random_uniform({513, 517}, 99, 0, 1, t));
      g.push_back(random_normal({513, 517}, 99, 0, 1, t));
    }
    EXPECT_EQ(u[0].to_bytes(), u[1].to_bytes());
    EXPECT_EQ(g[0].to_bytes(), g[1].to_bytes());
    // Element i depends on (seed, i) only: a shorter call gives a prefix of a longer one.
    std::vector<double> pre = random_uniform({7}, 99, 0, 1, t).to_vector<double>();
    std::vector<double> all = u[0].to_vector<double>();
    for (size_t i = 0; i < pre.size(); ++i) EXPECT_EQ(pre[i], all[i]);
    std::vector<double> gpre = random_normal({3, 3}, 99, 0, 1, t).to_vector<double>();
    std::vector<double> gall = g[0].to_vector<double>();
    for (size_t i = 0; i < gpre.size(); ++i) EXPECT_EQ(gpre[i], gall[i]);
    // Different seeds (including ones above 2^63) differ.
    EXPECT_GT(max_abs_diff(random_uniform({64}, 1, 0, 1, t), random_uniform({64}, 2, 0, 1, t)), 0);
    EXPECT_GT(max_abs_diff(random_normal({64}, 1ull << 63, 0, 1, t), random_normal({64}, 0, 0, 1, t)), 0);
    EXPECT_EQ(random_uniform({64}, ~0ull, 0, 1, t).to_bytes(), random_uniform({64}, ~0ull, 0, 1, t).to_bytes());
  }
}

TEST(CreationRandom, Errors) {
  expect_error([] { random_uniform({4}, 0, 1, 1); }, ErrorCode::kValue, "random_uniform");
  expect_error([] { random_uniform({4}, 0, 2, 1); }, ErrorCode::kValue, "random_uniform");
  expect_error([] { random_uniform({4}, 0, 0, std::numeric_limits<double>::infinity()); }, ErrorCode::kValue,
               "random_uniform");
  expect_error([] { random_uniform({4}, 0, -1e308, 1e308, DType::kFloat64); }, ErrorCode::kValue, "random_uniform");
  expect_error([] { random_uniform({4}, 0, 1.0001, 1.0002, DType::kFloat16); }, ErrorCode::kValue, "random_uniform");
  expect_error([] { random_uniform({4}, 0, 0, 1, DType::kInt32); }, ErrorCode::kDType, "random_uniform");
  expect_error([] { random_uniform({-4}, 0); }, ErrorCode::kValue, "random_uniform");
  expect_error([] { random_normal({4}, 0, 0, -1); }, ErrorCode::kValue, "random_normal");
  expect_error([] { random_normal({4}, 0, std::nan(""), 1); }, ErrorCode::kValue, "random_normal");
  expect_error([] { random_normal({4}, 0, 0, 1, DType::kBool); }, ErrorCode::kDType, "random_normal");
}

TEST(CreationRandom, RegistryListsTheFloatingKernels) {
  EXPECT_EQ(op_def(OpId::k_random_uniform).supported_dtypes(kCpuBackend),
            (std::vector<DType>{DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64}));
  EXPECT_EQ(op_def(OpId::k_fill).supported_dtypes(kCpuBackend).size(), (size_t)kNumDTypes);
}

}  // namespace
}  // namespace spore
