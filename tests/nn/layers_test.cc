// Dense, Embedding, activations, Flatten, Softmax; parameter naming, trainable_params, to_float.
#include <gtest/gtest.h>

#include <cmath>

#include "nn/nn_ref.h"
#include "spore/nn/layers.h"

namespace spore {
namespace {

using test::nnref::expect_error;
using test::nnref::layer_tol;
using test::nnref::values;

TEST(NnDense, ForwardEveryFloatDtype) {
  for (DType t : {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64}) {
    nn::Dense d(5, 3, true, nullptr, /*seed=*/11, t);
    EXPECT_EQ(d.weight().value().shape(), Shape({3, 5}));
    EXPECT_EQ(d.bias().value().dtype(), t);
    auto xv = test::random_values(4 * 5, t, -2, 2, 1);
    Tensor x = test::make_tensor(xv, {4, 5}, t);
    Tensor y = d(x);
    EXPECT_EQ(y.shape(), Shape({4, 3}));
    EXPECT_EQ(y.dtype(), t);
    test::expect_close(y, test::nnref::dense(xv, values(d.weight().value()), values(d.bias().value()), 4, 5, 3),
                       layer_tol(t), std::string("Dense ") + dtype_name(t));
  }
}

TEST(NnDense, LeadingAxesNoBiasActivationAndInit) {
  nn::Dense d(4, 6, /*has_bias=*/false, "relu", 3);
  EXPECT_FALSE(d.bias().defined());
  EXPECT_EQ(d.named_parameters().size(), 1u);
  auto w = values(d.weight().value());
  for (double v : w) EXPECT_LE(std::abs(v), 1 / std::sqrt(4.0));  // PyTorch's bound 1/sqrt(in)
  auto xv = test::random_values(2 * 3 * 4, DType::kFloat32, -1, 1, 2);
  Tensor y = d(test::make_tensor(xv, {2, 3, 4}, DType::kFloat32));
  EXPECT_EQ(y.shape(), Shape({2, 3, 6}));
  auto ref = test::nnref::dense(xv, w, {}, 6, 4, 6);
  for (double& v : ref) v = std::max(v, 0.0);
  test::expect_close(y, ref, layer_tol(DType::kFloat32), "Dense relu");
  // The same seed gives the same weights; another seed different ones.
  EXPECT_EQ(values(nn::Dense(4, 6, false, nullptr, 3).weight().value()), w);
  EXPECT_NE(values(nn::Dense(4, 6, false, nullptr, 4).weight().value()), w);
}

TEST(NnDense, Errors) {
  nn::Dense d(4, 2);
  expect_error([&] { d(zeros({3, 5})); }, ErrorCode::kShape, "Dense");
  expect_error([&] { d(zeros({3, 4}, DType::kInt32)); }, ErrorCode::kDType, "Dense");
  expect_error([] { nn::Dense(0, 2); }, ErrorCode::kValue, "in_channels");
  expect_error([] { nn::Dense(2, 2, true, "mish"); }, ErrorCode::kValue, "mish");
  expect_error([] { nn::Dense(2, 2, true, nullptr, 0, DType::kInt64); }, ErrorCode::kDType, "Dense");
}

TEST(NnEmbedding, LooksUpRows) {
  nn::Embedding e(10, 4, 5);
  auto table = values(e.embedding_table().value());
  for (DType it : {DType::kInt32, DType::kInt64}) {
    Tensor ids = test::make_tensor({3, 0, 9, 3, 7, 1}, {2, 3}, it);
    Tensor y = e(ids);
    EXPECT_EQ(y.shape(), Shape({2, 3, 4}));
    std::vector<double> ref;
    for (int id : {3, 0, 9, 3, 7, 1})
      for (int k = 0; k < 4; ++k) ref.push_back(table[id * 4 + k]);
    test::expect_close(y, ref, {0, 0}, "Embedding");
  }
  EXPECT_EQ(e.named_parameters()[0].first, "embedding_table");
  expect_error([&] { e(zeros({2})); }, ErrorCode::kDType, "Embedding");
  EXPECT_THROW(e(test::make_tensor({10}, {1}, DType::kInt64)), Error);  // out of range
}

double gelu_ref(double x, bool approx) {
  if (!approx) return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

TEST(NnActivation, MatchFormulas) {
  struct Case {
    nn::CellPtr cell;
    std::function<double(double)> f;
  };
  std::vector<Case> cases{
      {std::make_shared<nn::ReLU>(), [](double x) { return std::max(x, 0.0); }},
      {std::make_shared<nn::ReLU6>(), [](double x) { return std::min(std::max(x, 0.0), 6.0); }},
      {std::make_shared<nn::GELU>(), [](double x) { return gelu_ref(x, false); }},
      {std::make_shared<nn::GELU>(true), [](double x) { return gelu_ref(x, true); }},
      {std::make_shared<nn::SiLU>(), [](double x) { return x / (1 + std::exp(-x)); }},
      {std::make_shared<nn::Sigmoid>(), [](double x) { return 1 / (1 + std::exp(-x)); }},
      {std::make_shared<nn::Tanh>(), [](double x) { return std::tanh(x); }},
  };
  for (DType t : {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64}) {
    auto xv = test::random_values(24, t, -8, 8, 3);
    Tensor x = test::make_tensor(xv, {2, 3, 4}, t);
    for (auto& c : cases) {
      std::vector<double> ref;
      for (double v : xv) ref.push_back(c.f(v));
      Tensor y = (*c.cell)(x);
      EXPECT_EQ(y.dtype(), t);
      test::expect_close(y, ref, layer_tol(t), c.cell->name() + " " + dtype_name(t));
    }
  }
  EXPECT_EQ(nn::make_activation("swish")->name(), "SiLU");
  EXPECT_EQ(nn::make_activation(""), nullptr);
}

TEST(NnActivation, SoftmaxAndFlatten) {
  auto xv = test::random_values(2 * 3 * 4, DType::kFloat64, -3, 3, 4);
  Tensor x = test::make_tensor(xv, {2, 3, 4}, DType::kFloat64);
  // Softmax over axis 1 of [2, 3, 4].
  auto ls = test::nnref::log_softmax1(xv, 2, 3, 4);
  std::vector<double> ref;
  for (double v : ls) ref.push_back(std::exp(v));
  test::expect_close(nn::Softmax(1)(x), ref, "Softmax(1)");
  test::expect_close(nn::LogSoftmax(1)(x), ls, "LogSoftmax(1)");
  auto last = test::nnref::log_softmax1(xv, 6, 4, 1);
  for (double& v : last) v = std::exp(v);
  test::expect_close(nn::Softmax()(x), last, "Softmax(-1)");

  Tensor f = nn::Flatten()(x);
  EXPECT_EQ(f.shape(), Shape({2, 12}));
  test::expect_close(f, xv, "Flatten");
  EXPECT_EQ(nn::Flatten(0, 1)(x).shape(), Shape({6, 4}));
  // A non-contiguous input (a transposed view) flattens in logical order.
  Tensor xt = transpose(x, 1, 2);  // [2, 4, 3]
  std::vector<double> tref;
  for (int n = 0; n < 2; ++n)
    for (int j = 0; j < 4; ++j)
      for (int i = 0; i < 3; ++i) tref.push_back(xv[(n * 3 + i) * 4 + j]);
  test::expect_close(nn::Flatten()(xt), tref, "Flatten of a view");
}

TEST(NnCell, SequentialNamesAndTrainableParams) {
  nn::SequentialCell net({std::make_shared<nn::Dense>(4, 8, true, nullptr, 1), std::make_shared<nn::BatchNorm1d>(8),
                          std::make_shared<nn::ReLU>(), std::make_shared<nn::Dense>(8, 2, true, nullptr, 2)});
  std::vector<std::string> names;
  for (auto& [n, p] : net.named_parameters()) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"0.weight", "0.bias", "1.gamma", "1.beta", "1.moving_mean",
                                             "1.moving_variance", "3.weight", "3.bias"}));
  auto trainable = net.trainable_params();
  ASSERT_EQ(trainable.size(), 6u);
  for (auto& p : trainable) EXPECT_EQ(p.name().find("moving"), std::string::npos) << p.name();
  Tensor y = net(test::make_tensor(test::random_values(12, DType::kFloat32, -1, 1, 5), {3, 4}, DType::kFloat32));
  EXPECT_EQ(y.shape(), Shape({3, 2}));
}

TEST(NnCell, ToFloatRunsLowAndKeepsFloat32Masters) {
  for (DType low : {DType::kFloat16, DType::kBFloat16}) {
    auto net = std::make_shared<nn::SequentialCell>(std::vector<nn::CellPtr>{
        std::make_shared<nn::Dense>(6, 8, true, "gelu", 1), std::make_shared<nn::LayerNorm>(std::vector<int64_t>{8}),
        std::make_shared<nn::BatchNorm1d>(8), std::make_shared<nn::Dropout>(0.25, 3),
        std::make_shared<nn::Dense>(8, 3, true, nullptr, 2)});
    auto xv = test::random_values(5 * 6, DType::kFloat32, -1, 1, 6);
    Tensor x = test::make_tensor(xv, {5, 6}, DType::kFloat32);
    net->set_train(false);
    Tensor ref = (*net)(x);
    net->to_float(low);
    Tensor y0 = (*net)(x);
    EXPECT_EQ(y0.dtype(), low);
    test::expect_close(y0, values(ref), {0.08, 0.05}, std::string("to_float ") + dtype_name(low));
    for (int step = 0; step < 3; ++step) {
      net->set_train(step != 2);
      Tensor y = (*net)(x);
      EXPECT_EQ(y.dtype(), low);
      EXPECT_EQ(y.shape(), Shape({5, 3}));
    }
    for (auto& [n, p] : net->named_parameters()) EXPECT_EQ(p.value().dtype(), DType::kFloat32) << n;
    // Gradients reach the float32 masters through the casts.
    auto params = net->trainable_params();
    auto vg = value_and_grad([&](const std::vector<Tensor>& in) { return sum(cast((*net)(in[0]), DType::kFloat32)); },
                             GradPosition::none(), params);
    ValueAndGrad r = vg({x});
    ASSERT_EQ(r.weight_grads.size(), params.size());
    for (size_t i = 0; i < params.size(); ++i) EXPECT_EQ(r.weight_grads[i].dtype(), DType::kFloat32);
  }
}

}  // namespace
}  // namespace spore
