// Losses against the formulas PyTorch documents, every reduction, and their errors.
#include <gtest/gtest.h>

#include <cmath>

#include "nn/nn_ref.h"
#include "spore/nn/losses.h"

namespace spore {
namespace {

using test::nnref::expect_error;
using test::nnref::layer_tol;
using test::nnref::values;

std::vector<double> reduce_ref(const std::vector<double>& per, const std::string& r, double denom = -1) {
  if (r == "none") return per;
  double s = 0;
  for (double v : per) s += v;
  if (r == "sum") return {s};
  return {s / (denom > 0 ? denom : (double)per.size())};
}

const char* kReductions[] = {"mean", "sum", "none"};

TEST(NnLoss, MseAndL1) {
  for (DType t : {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64}) {
    auto a = test::random_values(12, t, -2, 2, 1), b = test::random_values(12, t, -2, 2, 2);
    Tensor x = test::make_tensor(a, {3, 4}, t), y = test::make_tensor(b, {3, 4}, t);
    std::vector<double> sq, ab;
    for (int i = 0; i < 12; ++i) sq.push_back((a[i] - b[i]) * (a[i] - b[i])), ab.push_back(std::abs(a[i] - b[i]));
    test::Tol tol = layer_tol(t);
    if (t == DType::kBFloat16) tol = {6e-2, 2e-2};
    for (const char* r : kReductions) {
      test::expect_close(nn::mse_loss(x, y, r), reduce_ref(sq, r), tol, std::string("mse ") + r + dtype_name(t));
      test::expect_close(nn::MSELoss(r)(x, y), reduce_ref(sq, r), tol, "MSELoss");
      test::expect_close(nn::l1_loss(x, y, r), reduce_ref(ab, r), tol, std::string("l1 ") + r);
      test::expect_close(nn::L1Loss(r)(x, y), reduce_ref(ab, r), tol, "L1Loss");
    }
    EXPECT_EQ(nn::mse_loss(x, y).shape(), Shape({}));
  }
}

TEST(NnLoss, ShapeAndDTypeErrorsNameTheLoss) {
  Tensor a = zeros({3, 4}), b = zeros({3, 5});
  expect_error([&] { nn::MSELoss()(a, b); }, ErrorCode::kShape, "MSELoss: logits shape [3, 4] and labels shape [3, 5]");
  expect_error([&] { nn::l1_loss(a, zeros({4})); }, ErrorCode::kShape, "l1_loss");
  expect_error([&] { nn::BCEWithLogitsLoss()(a, b); }, ErrorCode::kShape, "BCEWithLogitsLoss");
  expect_error([&] { nn::mse_loss(a, zeros({3, 4}, DType::kInt32)); }, ErrorCode::kDType, "mse_loss");
  expect_error([&] { nn::mse_loss(a, a, "avg"); }, ErrorCode::kValue, "avg");
  expect_error([] { nn::L1Loss("avg"); }, ErrorCode::kValue, "L1Loss");
  // Cross entropy: class labels of the wrong shape or dtype.
  expect_error([&] { nn::CrossEntropyLoss()(a, zeros({4}, DType::kInt64)); }, ErrorCode::kShape,
               "CrossEntropyLoss: logits shape [3, 4] and labels shape [4]");
  expect_error([&] { nn::CrossEntropyLoss()(a, zeros({3})); }, ErrorCode::kDType, "int32 or int64");
  expect_error([&] { nn::cross_entropy(a, zeros({3, 5})); }, ErrorCode::kShape, "cross_entropy");
  expect_error([&] { nn::cross_entropy(zeros({3, 4}, DType::kInt32), zeros({3}, DType::kInt64)); }, ErrorCode::kDType,
               "cross_entropy");
  expect_error([&] { nn::NLLLoss()(a, test::make_tensor({0, 4, 1}, {3}, DType::kInt64)); }, ErrorCode::kIndex,
               "NLLLoss");
  expect_error([] { nn::CrossEntropyLoss("mean", 1.5); }, ErrorCode::kValue, "label_smoothing");
  expect_error([&] { nn::MSELoss().construct(a); }, ErrorCode::kValue, "two tensors");
}

// Cross entropy with class indices over [N, C, K] logits, smoothing ls, ignore_index.
std::vector<double> ce_ref(const std::vector<double>& x, const std::vector<int64_t>& lab, int64_t N, int64_t C,
                           int64_t K, double ls, int64_t ignore, double& count) {
  auto lp = test::nnref::log_softmax1(x, N, C, K);
  std::vector<double> per;
  count = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) {
      const int64_t y = lab[n * K + k];
      if (y == ignore) {
        per.push_back(0);
        continue;
      }
      count += 1;
      double smooth = 0;
      for (int64_t c = 0; c < C; ++c) smooth -= lp[(n * C + c) * K + k] / (double)C;
      per.push_back((1 - ls) * -lp[(n * C + y) * K + k] + ls * smooth);
    }
  return per;
}

TEST(NnLoss, CrossEntropyClassIndices) {
  const int64_t N = 4, C = 5;
  for (DType t : {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64}) {
    auto xv = test::random_values(N * C, t, -3, 3, 3);
    Tensor x = test::make_tensor(xv, {N, C}, t);
    std::vector<int64_t> lab{1, 4, 0, 2};
    test::Tol tol = t == DType::kBFloat16 ? test::Tol{4e-2, 3e-2} : t == DType::kFloat16 ? test::Tol{6e-3, 6e-3} : layer_tol(t);
    for (DType it : {DType::kInt32, DType::kInt64}) {
      Tensor y = test::make_tensor({1, 4, 0, 2}, {N}, it);
      for (double ls : {0.0, 0.1}) {
        double cnt;
        auto per = ce_ref(xv, lab, N, 5, 1, ls, -100, cnt);
        for (const char* r : kReductions) {
          Tensor got = nn::CrossEntropyLoss(r, ls)(x, y);
          EXPECT_EQ(got.dtype(), t);
          test::expect_close(got, reduce_ref(per, r), tol, std::string("ce ") + r + " ls " + std::to_string(ls));
        }
      }
    }
  }
}

TEST(NnLoss, CrossEntropySpatialIgnoreIndexAndUnbatched) {
  const int64_t N = 2, C = 3, K = 4;
  auto xv = test::random_values(N * C * K, DType::kFloat64, -2, 2, 4);
  Tensor x = test::make_tensor(xv, {N, C, 2, 2}, DType::kFloat64);
  std::vector<int64_t> lab{0, 2, -100, 1, 1, 1, 0, -100};
  Tensor y = test::make_tensor({0, 2, -100, 1, 1, 1, 0, -100}, {N, 2, 2}, DType::kInt64);
  double cnt;
  auto per = ce_ref(xv, lab, N, C, K, 0.2, -100, cnt);
  EXPECT_EQ(cnt, 6);
  test::expect_close(nn::cross_entropy(x, y, "mean", 0.2), reduce_ref(per, "mean", cnt), "ce spatial mean");
  test::expect_close(nn::cross_entropy(x, y, "sum", 0.2), reduce_ref(per, "sum"), "ce spatial sum");
  Tensor none = nn::cross_entropy(x, y, "none", 0.2);
  EXPECT_EQ(none.shape(), Shape({N, 2, 2}));
  test::expect_close(none, per, "ce spatial none");
  // A custom ignore_index.
  Tensor y2 = test::make_tensor({0, 2, 2, 1, 1, 1, 0, 2}, {N, 2, 2}, DType::kInt32);
  per = ce_ref(xv, {0, 2, 2, 1, 1, 1, 0, 2}, N, C, K, 0, 2, cnt);
  test::expect_close(nn::cross_entropy(x, y2, "mean", 0, 2), reduce_ref(per, "mean", cnt), "ignore_index 2");
  // Unbatched [C] logits with a 0-d label.
  Tensor xc = test::make_tensor({0.5, -1, 2}, {3}, DType::kFloat64);
  auto lp = test::nnref::log_softmax1({0.5, -1, 2}, 1, 3, 1);
  Tensor l0 = nn::cross_entropy(xc, Tensor::scalar<int64_t>(1), "none");
  EXPECT_EQ(l0.shape(), Shape({}));
  test::expect_close(l0, {-lp[1]}, "unbatched");
}

TEST(NnLoss, CrossEntropyProbabilityTargets) {
  const int64_t N = 3, C = 4;
  auto xv = test::random_values(N * C, DType::kFloat32, -2, 2, 5);
  std::vector<double> pv(N * C);
  auto raw = test::random_values(N * C, DType::kFloat64, 0.1, 1, 6);
  for (int n = 0; n < N; ++n) {
    double s = 0;
    for (int c = 0; c < C; ++c) s += raw[n * C + c];
    for (int c = 0; c < C; ++c) pv[n * C + c] = (double)(float)(raw[n * C + c] / s);
  }
  auto lp = test::nnref::log_softmax1(xv, N, C, 1);
  for (double ls : {0.0, 0.3}) {
    std::vector<double> per(N, 0);
    for (int n = 0; n < N; ++n)
      for (int c = 0; c < C; ++c) per[n] -= (pv[n * C + c] * (1 - ls) + ls / C) * lp[n * C + c];
    Tensor x = test::make_tensor(xv, {N, C}, DType::kFloat32), p = test::make_tensor(pv, {N, C}, DType::kFloat32);
    for (const char* r : kReductions)
      test::expect_close(nn::CrossEntropyLoss(r, ls)(x, p), reduce_ref(per, r), layer_tol(DType::kFloat32),
                         std::string("ce probs ") + r);
  }
}

TEST(NnLoss, NllLoss) {
  const int64_t N = 5, C = 3;
  auto xv = test::random_values(N * C, DType::kFloat64, -4, 0, 7);
  Tensor x = test::make_tensor(xv, {N, C}, DType::kFloat64);
  std::vector<double> per;
  std::vector<double> lab{2, 0, 1, -100, 2};
  for (int n = 0; n < N; ++n) per.push_back(lab[n] < 0 ? 0 : -xv[n * C + (int)lab[n]]);
  Tensor y = test::make_tensor(lab, {N}, DType::kInt64);
  test::expect_close(nn::NLLLoss()(x, y), reduce_ref(per, "mean", 4), "nll mean");
  test::expect_close(nn::NLLLoss("sum")(x, y), reduce_ref(per, "sum"), "nll sum");
  test::expect_close(nn::nll_loss(x, y, "none"), per, "nll none");
  // NLL of log_softmax is cross entropy.
  auto ce = values(nn::cross_entropy(x, y)), nll = values(nn::nll_loss(log_softmax(x, 1), y));
  EXPECT_NEAR(ce[0], nll[0], 1e-12);
}

TEST(NnLoss, BceWithLogitsStable) {
  for (DType t : {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64}) {
    auto xv = test::random_values(16, t, -6, 6, 8), yv = test::random_values(16, t, 0, 1, 9);
    xv[0] = 0;
    if (t == DType::kFloat32 || t == DType::kFloat64) xv[1] = 200, xv[2] = -200;  // no overflow
    std::vector<double> per;
    for (int i = 0; i < 16; ++i)
      per.push_back(std::max(xv[i], 0.0) - xv[i] * yv[i] + std::log1p(std::exp(-std::abs(xv[i]))));
    Tensor x = test::make_tensor(xv, {4, 4}, t), y = test::make_tensor(yv, {4, 4}, t);
    test::Tol tol = t == DType::kBFloat16 ? test::Tol{6e-2, 3e-2} : t == DType::kFloat16 ? test::Tol{6e-3, 6e-3} : layer_tol(t);
    for (const char* r : kReductions)
      test::expect_close(nn::BCEWithLogitsLoss(r)(x, y), reduce_ref(per, r), tol, std::string("bce ") + r + dtype_name(t));
  }
}

}  // namespace
}  // namespace spore
