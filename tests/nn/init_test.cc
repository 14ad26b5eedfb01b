// Initializers: bounds, moments, reproducibility by seed, fan computation, errors.
#include <gtest/gtest.h>

#include <cmath>

#include "nn/nn_ref.h"
#include "spore/nn/init.h"

namespace spore {
namespace {

using test::nnref::expect_error;
using test::nnref::values;

struct Moments {
  double mean, std, min, max;
};
Moments moments(const Tensor& t) {
  auto v = values(t);
  double s = 0, s2 = 0, lo = 1e300, hi = -1e300;
  for (double x : v) s += x, s2 += x * x, lo = std::min(lo, x), hi = std::max(hi, x);
  double m = s / (double)v.size();
  return {m, std::sqrt(s2 / (double)v.size() - m * m), lo, hi};
}

TEST(NnInit, FanInFanOut) {
  EXPECT_EQ(nn::init::fan_in_and_fan_out({8, 4}), (std::pair<int64_t, int64_t>{4, 8}));
  EXPECT_EQ(nn::init::fan_in_and_fan_out({16, 3, 5, 5}), (std::pair<int64_t, int64_t>{75, 400}));
  expect_error([] { nn::init::fan_in_and_fan_out({7}); }, ErrorCode::kShape, "at least 2 axes");
  EXPECT_NEAR(nn::init::calculate_gain("relu"), std::sqrt(2.0), 1e-15);
  EXPECT_NEAR(nn::init::calculate_gain("tanh"), 5.0 / 3, 1e-15);
  EXPECT_NEAR(nn::init::calculate_gain("leaky_relu", std::sqrt(5.0)), std::sqrt(1.0 / 3), 1e-15);
  expect_error([] { nn::init::calculate_gain("softsign"); }, ErrorCode::kValue, "softsign");
}

TEST(NnInit, ZerosOnesConstant) {
  for (DType t : {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64}) {
    Tensor z = nn::init::zeros({3, 2}, t), o = nn::init::ones({3, 2}, t), c = nn::init::constant({4}, 0.5, t);
    EXPECT_EQ(z.dtype(), t);
    test::expect_close(z, std::vector<double>(6, 0.0));
    test::expect_close(o, std::vector<double>(6, 1.0));
    test::expect_close(c, std::vector<double>(4, 0.5));
  }
}

TEST(NnInit, UniformAndNormalMomentsAndSeeds) {
  Tensor u = nn::init::uniform({200, 100}, 7, -2, 3);
  Moments m = moments(u);
  EXPECT_GE(m.min, -2);
  EXPECT_LT(m.max, 3);
  EXPECT_NEAR(m.mean, 0.5, 0.05);
  EXPECT_NEAR(m.std, 5 / std::sqrt(12.0), 0.03);
  Tensor n = nn::init::normal({200, 100}, 7, 1.5, 0.5, DType::kFloat64);
  m = moments(n);
  EXPECT_NEAR(m.mean, 1.5, 0.02);
  EXPECT_NEAR(m.std, 0.5, 0.01);
  // Same seed: the same values; another seed: different ones.
  EXPECT_EQ(values(nn::init::uniform({50}, 7, -2, 3)), values(nn::init::uniform({50}, 7, -2, 3)));
  EXPECT_NE(values(nn::init::uniform({50}, 7, -2, 3)), values(nn::init::uniform({50}, 8, -2, 3)));
  expect_error([] { nn::init::uniform({3}, 1, 2, 1); }, ErrorCode::kValue, "low");
  expect_error([] { nn::init::normal({3}, 1, 0, -1); }, ErrorCode::kValue, "std");
  expect_error([] { nn::init::normal({3}, 1, 0, 1, DType::kInt32); }, ErrorCode::kDType, "int32");
}

TEST(NnInit, XavierAndHeBounds) {
  const std::vector<int64_t> shape{64, 32, 3, 3};  // fan_in 288, fan_out 576
  const double xb = std::sqrt(6.0 / (288 + 576));
  Moments m = moments(nn::init::xavier_uniform(shape, 3, 2.0));
  EXPECT_LE(m.max, 2 * xb);
  EXPECT_GE(m.min, -2 * xb);
  EXPECT_NEAR(m.std, 2 * xb / std::sqrt(3.0), 2 * xb * 0.03);
  m = moments(nn::init::xavier_normal(shape, 3));
  EXPECT_NEAR(m.std, std::sqrt(2.0 / (288 + 576)), 0.02 * std::sqrt(2.0 / 864));
  const double he_std = std::sqrt(2.0) / std::sqrt(288.0);  // relu gain, fan_in
  m = moments(nn::init::he_normal(shape, 4, 0, "fan_in", "relu"));
  EXPECT_NEAR(m.std, he_std, 0.02 * he_std);
  EXPECT_NEAR(m.mean, 0, 0.02 * he_std);
  m = moments(nn::init::he_uniform(shape, 4, 0, "fan_out", "relu"));
  const double hb = std::sqrt(3.0) * std::sqrt(2.0) / std::sqrt(576.0);
  EXPECT_LE(m.max, hb);
  EXPECT_GE(m.min, -hb);
  EXPECT_GT(m.max, 0.95 * hb);
  // kaiming_* are the same functions.
  EXPECT_EQ(values(nn::init::kaiming_uniform({4, 5}, 9)), values(nn::init::he_uniform({4, 5}, 9)));
  expect_error([] { nn::init::he_uniform({4, 5}, 1, 0, "fan_avg"); }, ErrorCode::kValue, "fan_avg");
  expect_error([] { nn::init::xavier_uniform({5}, 1); }, ErrorCode::kShape, "[5]");
}

TEST(NnInit, DeriveSeedSpreads) {
  EXPECT_NE(nn::init::derive_seed(0, 0), nn::init::derive_seed(0, 1));
  EXPECT_NE(nn::init::derive_seed(0, 1), nn::init::derive_seed(1, 0));
  EXPECT_EQ(nn::init::derive_seed(42, 3), nn::init::derive_seed(42, 3));
}

}  // namespace
}  // namespace spore
