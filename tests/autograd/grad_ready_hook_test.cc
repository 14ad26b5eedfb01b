// value_and_grad's gradient-ready hook (NOTE [Gradient-ready hook] in include/spore/autograd.h):
// each weight reported once, with its final gradient, as soon as backward has passed its first
// use, so the last layer's weights come before the first layer's.
#include <gtest/gtest.h>

#include <cmath>

#include "spore/autograd.h"
#include "spore/ops.h"

namespace spore {
namespace {

struct Report {
  size_t index;
  std::vector<double> grad;
};

TEST(GradReadyHook, LastLayerFirstWithFinalGradients) {
  // Three "layers": y = sum(tanh(tanh(x * w0) * w1) * w2). w2 is used last, so it is final first.
  Parameter w0(Tensor::from_vector<double>({0.5, -0.3, 0.8}, Shape{3}), "w0");
  Parameter w1(Tensor::from_vector<double>({1.1, 0.4, -0.7}, Shape{3}), "w1");
  Parameter w2(Tensor::from_vector<double>({-0.2, 0.9, 0.6}, Shape{3}), "w2");
  Parameter unused(Tensor::from_vector<double>({1.0}, Shape{1}), "unused");
  std::vector<Report> reports;
  auto fn = [&](const std::vector<Tensor>& in) {
    return sum(mul(tanh(mul(tanh(mul(in[0], w0.value())), w1.value())), w2.value()));
  };
  auto vg = value_and_grad(fn, GradPosition::none(), {w0, w1, unused, w2}, std::nullopt,
                           [&](size_t i, const Tensor& g) {
                             reports.push_back({i, g.to_vector<double>()});
                           });
  Tensor x = Tensor::from_vector<double>({0.3, -1.2, 2.0}, Shape{3});
  ValueAndGrad r = vg({x});
  ASSERT_EQ(reports.size(), 4u);
  // Order: w2 (index 3), w1 (1), w0 (0) during the walk; the unused weight (2) after it.
  EXPECT_EQ(reports[0].index, 3u);
  EXPECT_EQ(reports[1].index, 1u);
  EXPECT_EQ(reports[2].index, 0u);
  EXPECT_EQ(reports[3].index, 2u);
  for (const Report& rep : reports)
    EXPECT_EQ(rep.grad, r.weight_grads[rep.index].to_vector<double>()) << rep.index;
  EXPECT_EQ(reports[3].grad, std::vector<double>{0.0});
  // The gradients themselves against the chain rule by hand.
  const std::vector<double> xv = x.to_vector<double>(), a = w0.value().to_vector<double>(),
                            b = w1.value().to_vector<double>(), c = w2.value().to_vector<double>();
  for (int i = 0; i < 3; ++i) {
    const double h1 = std::tanh(xv[i] * a[i]), h2 = std::tanh(h1 * b[i]);
    EXPECT_NEAR(r.weight_grads[3].to_vector<double>()[i], h2, 1e-12);
    EXPECT_NEAR(r.weight_grads[1].to_vector<double>()[i], c[i] * (1 - h2 * h2) * h1, 1e-12);
    EXPECT_NEAR(r.weight_grads[0].to_vector<double>()[i],
                c[i] * (1 - h2 * h2) * b[i] * (1 - h1 * h1) * xv[i], 1e-12);
  }
}

// A weight used twice (early and late) is final only once the walk has passed its early use:
// reporting it at its late use would hand out half of its gradient.
TEST(GradReadyHook, SharedWeightWaitsForItsFirstUse) {
  Parameter w(Tensor::from_vector<double>({0.7, -0.4}, Shape{2}), "w");
  Parameter v(Tensor::from_vector<double>({1.5, 0.5}, Shape{2}), "v");
  std::vector<Report> reports;
  // y = sum(w * v * tanh(w * x)): w's first use is inside tanh, its second at the end.
  auto fn = [&](const std::vector<Tensor>& in) {
    return sum(mul(mul(w.value(), v.value()), tanh(mul(w.value(), in[0]))));
  };
  auto vg = value_and_grad(fn, GradPosition::none(), {w, v}, std::nullopt,
                           [&](size_t i, const Tensor& g) {
                             reports.push_back({i, g.to_vector<double>()});
                           });
  Tensor x = Tensor::from_vector<double>({0.9, -2.0}, Shape{2});
  ValueAndGrad r = vg({x});
  ASSERT_EQ(reports.size(), 2u);
  for (const Report& rep : reports)
    EXPECT_EQ(rep.grad, r.weight_grads[rep.index].to_vector<double>()) << rep.index;
  const std::vector<double> wv = w.value().to_vector<double>(), vv = v.value().to_vector<double>(),
                            xv = x.to_vector<double>();
  for (int i = 0; i < 2; ++i) {
    const double t = std::tanh(wv[i] * xv[i]);
    EXPECT_NEAR(r.weight_grads[0].to_vector<double>()[i],
                vv[i] * t + wv[i] * vv[i] * (1 - t * t) * xv[i], 1e-12);
  }
}

}  // namespace
}  // namespace spore
