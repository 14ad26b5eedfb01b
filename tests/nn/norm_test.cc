// BatchNorm (train/eval, running statistics), LayerNorm, RMSNorm, Dropout.
#include <gtest/gtest.h>

#include <cmath>

#include "nn/nn_ref.h"
#include "spore/nn/layers.h"

namespace spore {
namespace {

using test::nnref::expect_error;
using test::nnref::layer_tol;
using test::nnref::values;

// Per-channel statistics of [N, C, S] data: mean, biased and unbiased variance.
struct Stats {
  std::vector<double> mean, var_b, var_u;
};
Stats channel_stats(const std::vector<double>& x, int64_t N, int64_t C, int64_t S) {
  Stats st{std::vector<double>(C), std::vector<double>(C), std::vector<double>(C)};
  const double n = (double)(N * S);
  for (int64_t c = 0; c < C; ++c) {
    double s = 0;
    for (int64_t i = 0; i < N; ++i)
      for (int64_t k = 0; k < S; ++k) s += x[(i * C + c) * S + k];
    double m = s / n, q = 0;
    for (int64_t i = 0; i < N; ++i)
      for (int64_t k = 0; k < S; ++k) q += (x[(i * C + c) * S + k] - m) * (x[(i * C + c) * S + k] - m);
    st.mean[c] = m, st.var_b[c] = q / n, st.var_u[c] = q / (n - 1);
  }
  return st;
}

std::vector<double> bn_ref(const std::vector<double>& x, int64_t N, int64_t C, int64_t S, const std::vector<double>& m,
                           const std::vector<double>& v, const std::vector<double>& g, const std::vector<double>& b,
                           double eps) {
  std::vector<double> y(x.size());
  for (int64_t i = 0; i < N; ++i)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t k = 0; k < S; ++k) {
        size_t j = (size_t)((i * C + c) * S + k);
        y[j] = (x[j] - m[c]) / std::sqrt(v[c] + eps) * g[c] + b[c];
      }
  return y;
}

TEST(NnBatchNorm, TrainUsesBatchStatsAndUpdatesRunningStats) {
  for (DType t : {DType::kFloat32, DType::kFloat64}) {
    const int64_t N = 4, C = 3, H = 2, W = 3, S = H * W;
    nn::BatchNorm2d bn(C, 1e-5, 0.9, true, t);
    // Non-trivial affine parameters.
    bn.gamma().set_value(test::make_tensor({0.5, 2.0, -1.0}, {3}, t));
    bn.beta().set_value(test::make_tensor({0.1, -0.2, 0.3}, {3}, t));
    auto xv = test::random_values(N * C * S, t, -2, 3, 7);
    Tensor x = test::make_tensor(xv, {N, C, H, W}, t);
    Stats st = channel_stats(xv, N, C, S);
    Tensor y = bn(x);
    test::expect_close(y, bn_ref(xv, N, C, S, st.mean, st.var_b, {0.5, 2, -1}, {0.1, -0.2, 0.3}, 1e-5), layer_tol(t),
                       "BatchNorm2d train");
    // moving = 0.9 * moving + 0.1 * batch, starting from mean 0 and variance 1; unbiased variance.
    std::vector<double> rm(C), rv(C);
    for (int c = 0; c < C; ++c) rm[c] = 0.1 * st.mean[c], rv[c] = 0.9 + 0.1 * st.var_u[c];
    test::expect_close(bn.moving_mean().value(), rm, layer_tol(t), "moving_mean after 1 step");
    test::expect_close(bn.moving_variance().value(), rv, layer_tol(t), "moving_variance after 1 step");
    bn(x);
    for (int c = 0; c < C; ++c) rm[c] = 0.9 * rm[c] + 0.1 * st.mean[c], rv[c] = 0.9 * rv[c] + 0.1 * st.var_u[c];
    test::expect_close(bn.moving_mean().value(), rm, layer_tol(t), "moving_mean after 2 steps");
    test::expect_close(bn.moving_variance().value(), rv, layer_tol(t), "moving_variance after 2 steps");

    // Evaluation uses the moving statistics and leaves them alone.
    bn.set_train(false);
    Tensor e = bn(x);
    test::expect_close(e, bn_ref(xv, N, C, S, rm, rv, {0.5, 2, -1}, {0.1, -0.2, 0.3}, 1e-5), layer_tol(t),
                       "BatchNorm2d eval");
    test::expect_close(bn.moving_mean().value(), rm, layer_tol(t), "eval keeps moving_mean");
  }
}

TEST(NnBatchNorm, OneDimensionalAndViews) {
  const int64_t N = 5, C = 4, L = 3;
  nn::BatchNorm1d bn(C, 1e-3, 0.5, /*affine=*/false);
  EXPECT_EQ(bn.named_parameters().size(), 2u);
  EXPECT_TRUE(bn.trainable_params().empty());
  // [N, C] input made as a transposed view of [C, N].
  auto xv = test::random_values(N * C, DType::kFloat32, -1, 1, 8);
  Tensor base = test::make_tensor(xv, {C, N}, DType::kFloat32);
  Tensor x = transpose(base, 0, 1);
  std::vector<double> xr(N * C);
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c) xr[n * C + c] = xv[c * N + n];
  Stats st = channel_stats(xr, N, C, 1);
  test::expect_close(bn(x), bn_ref(xr, N, C, 1, st.mean, st.var_b, std::vector<double>(C, 1), std::vector<double>(C, 0), 1e-3),
                     layer_tol(DType::kFloat32), "BatchNorm1d [N, C] view");
  std::vector<double> rm(C);
  for (int c = 0; c < C; ++c) rm[c] = 0.5 * st.mean[c];
  test::expect_close(bn.moving_mean().value(), rm, layer_tol(DType::kFloat32), "momentum 0.5");
  // [N, C, L]
  auto x3 = test::random_values(N * C * L, DType::kFloat32, -1, 1, 9);
  nn::BatchNorm1d bn3(C);
  Stats s3 = channel_stats(x3, N, C, L);
  test::expect_close(bn3(test::make_tensor(x3, {N, C, L}, DType::kFloat32)),
                     bn_ref(x3, N, C, L, s3.mean, s3.var_b, std::vector<double>(C, 1), std::vector<double>(C, 0), 1e-5),
                     layer_tol(DType::kFloat32), "BatchNorm1d [N, C, L]");
}

TEST(NnBatchNorm, Errors) {
  nn::BatchNorm2d bn(3);
  expect_error([&] { bn(zeros({2, 4, 2, 2})); }, ErrorCode::kShape, "BatchNorm2d");
  expect_error([&] { bn(zeros({2, 3, 2})); }, ErrorCode::kShape, "[N, C, H, W]");
  expect_error([&] { bn(zeros({1, 3, 1, 1})); }, ErrorCode::kShape, "more than one value");
  expect_error([&] { bn(zeros({2, 3, 2, 2}, DType::kInt32)); }, ErrorCode::kDType, "BatchNorm2d");
  expect_error([] { nn::BatchNorm1d(3, 1e-5, 1.5); }, ErrorCode::kValue, "momentum");
  bn.set_train(false);
  EXPECT_EQ(bn(zeros({1, 3, 1, 1})).shape(), Shape({1, 3, 1, 1}));  // eval accepts one value per channel
}

TEST(NnLayerNorm, NormalisesTrailingAxes) {
  for (DType t : {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64}) {
    const int64_t B = 3, A = 2, D = 5;
    nn::LayerNorm ln({A, D}, 1e-5, true, t);
    auto gv = test::random_values(A * D, t, 0.5, 1.5, 1), bv = test::random_values(A * D, t, -0.5, 0.5, 2);
    ln.gamma().set_value(test::make_tensor(gv, {A, D}, t));
    ln.beta().set_value(test::make_tensor(bv, {A, D}, t));
    auto xv = test::random_values(B * A * D, t, -2, 2, 3);
    std::vector<double> ref(xv.size());
    for (int b = 0; b < B; ++b) {
      double m = 0, v = 0;
      for (int k = 0; k < A * D; ++k) m += xv[b * A * D + k];
      m /= A * D;
      for (int k = 0; k < A * D; ++k) v += (xv[b * A * D + k] - m) * (xv[b * A * D + k] - m);
      v /= A * D;
      for (int k = 0; k < A * D; ++k) ref[b * A * D + k] = (xv[b * A * D + k] - m) / std::sqrt(v + 1e-5) * gv[k] + bv[k];
    }
    Tensor y = ln(test::make_tensor(xv, {B, A, D}, t));
    EXPECT_EQ(y.dtype(), t);
    test::Tol tol = layer_tol(t);
    if (t == DType::kFloat16) tol = {1e-2, 1e-2};
    if (t == DType::kBFloat16) tol = {8e-2, 4e-2};
    test::expect_close(y, ref, tol, std::string("LayerNorm ") + dtype_name(t));
  }
  nn::LayerNorm ln({4});
  expect_error([&] { ln(zeros({2, 5})); }, ErrorCode::kShape, "LayerNorm");
  EXPECT_EQ(nn::LayerNorm({4}, 1e-5, false).named_parameters().size(), 0u);
}

TEST(NnRMSNorm, Forward) {
  for (DType t : {DType::kFloat32, DType::kFloat64}) {
    const int64_t R = 4, D = 6;
    nn::RMSNorm rn(D, 1e-6, t);
    auto wv = test::random_values(D, t, 0.5, 1.5, 4);
    rn.weight().set_value(test::make_tensor(wv, {D}, t));
    auto xv = test::random_values(R * D, t, -2, 2, 5);
    std::vector<double> ref(xv.size());
    for (int r = 0; r < R; ++r) {
      double ms = 0;
      for (int k = 0; k < D; ++k) ms += xv[r * D + k] * xv[r * D + k];
      ms /= D;
      for (int k = 0; k < D; ++k) ref[r * D + k] = xv[r * D + k] / std::sqrt(ms + 1e-6) * wv[k];
    }
    test::expect_close(rn(test::make_tensor(xv, {2, 2, D}, t)), ref, layer_tol(t), "RMSNorm");
  }
  expect_error([] { nn::RMSNorm(4)(zeros({2, 3})); }, ErrorCode::kShape, "RMSNorm");
}

TEST(NnDropout, TrainScalesEvalIsIdentity) {
  const double p = 0.3;
  nn::Dropout d(p, 17);
  auto xv = test::random_values(4000, DType::kFloat32, 0.5, 1.5, 6);
  Tensor x = test::make_tensor(xv, {40, 100}, DType::kFloat32);
  Tensor y = d(x);
  auto yv = values(y);
  int64_t kept = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    if (yv[i] != 0) {
      ++kept;
      EXPECT_NEAR(yv[i], xv[i] / (1 - p), 1e-6 * xv[i]) << i;
    }
  }
  EXPECT_NEAR((double)kept / 4000, 1 - p, 0.03);
  // A new mask on every call; the same sequence for the same seed.
  auto y2 = values(d(x));
  EXPECT_NE(yv, y2);
  nn::Dropout again(p, 17);
  EXPECT_EQ(values(again(x)), yv);
  EXPECT_EQ(values(again(x)), y2);
  EXPECT_EQ(d.calls(), 2u);
  // Evaluation: the identity, no mask drawn.
  d.set_train(false);
  EXPECT_EQ(values(d(x)), xv);
  EXPECT_EQ(d.calls(), 2u);
  // p = 0 keeps all, p = 1 drops all.
  EXPECT_EQ(values(nn::Dropout(0.0)(x)), xv);
  for (double v : values(nn::Dropout(1.0)(x))) EXPECT_EQ(v, 0);
  expect_error([] { nn::Dropout(1.5); }, ErrorCode::kValue, "Dropout");
  // float16 input keeps its dtype.
  EXPECT_EQ(nn::Dropout(0.5, 1)(cast(x, DType::kFloat16)).dtype(), DType::kFloat16);
}

}  // namespace
}  // namespace spore
