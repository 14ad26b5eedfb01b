// Gradient checks (float64, central differences) of every non-convolution layer and every loss:
// autograd differentiates them through the ops' backward rules.
#include <gtest/gtest.h>

#include "nn/nn_ref.h"
#include "spore/nn/layers.h"

namespace spore {
namespace {

using test::nnref::gradcheck_cell;

const DType f64 = DType::kFloat64;

Tensor rnd(std::vector<int64_t> s, uint32_t seed, double lo = -1, double hi = 1) {
  int64_t n = 1;
  for (auto d : s) n *= d;
  return test::make_tensor(test::random_values(n, f64, lo, hi, seed), s, f64);
}

TEST(NnGrad, DenseAndEmbedding) {
  nn::Dense d(4, 3, true, "tanh", 1, f64);
  gradcheck_cell(d, rnd({2, 4}, 1), "Dense tanh");
  nn::Dense nb(3, 2, false, nullptr, 2, f64);
  gradcheck_cell(nb, rnd({2, 2, 3}, 2), "Dense no bias, leading axes");
  nn::Embedding e(6, 3, 3, f64);
  gradcheck_cell(e, test::make_tensor({1, 5, 1, 0}, {2, 2}, DType::kInt64), "Embedding", /*check_input=*/false);
}

TEST(NnGrad, Activations) {
  // Values away from the kinks of relu/relu6 (0 and 6).
  Tensor x = rnd({3, 4}, 3, 0.1, 1.5);
  Tensor xs = sub(mul(x, 5.0), 4.0);  // spans [-3.5, 3.5] without hitting 0 exactly
  for (nn::CellPtr c : std::vector<nn::CellPtr>{std::make_shared<nn::ReLU>(), std::make_shared<nn::ReLU6>(),
                                                std::make_shared<nn::GELU>(), std::make_shared<nn::GELU>(true),
                                                std::make_shared<nn::SiLU>(), std::make_shared<nn::Sigmoid>(),
                                                std::make_shared<nn::Tanh>(), std::make_shared<nn::Softmax>(0),
                                                std::make_shared<nn::LogSoftmax>(), std::make_shared<nn::Flatten>()})
    gradcheck_cell(*c, xs.contiguous(), c->name());
}

TEST(NnGrad, Norms) {
  nn::BatchNorm2d bn(3, 1e-5, 0.9, true, f64);
  bn.gamma().set_value(rnd({3}, 4, 0.5, 1.5));
  bn.beta().set_value(rnd({3}, 5));
  gradcheck_cell(bn, rnd({2, 3, 2, 2}, 6), "BatchNorm2d train");
  bn.set_train(false);
  gradcheck_cell(bn, rnd({2, 3, 2, 2}, 7), "BatchNorm2d eval");
  nn::BatchNorm1d bn1(4, 1e-5, 0.9, true, f64);
  gradcheck_cell(bn1, rnd({5, 4}, 8), "BatchNorm1d train");
  nn::LayerNorm ln({2, 3}, 1e-5, true, f64);
  ln.gamma().set_value(rnd({2, 3}, 9, 0.5, 1.5));
  gradcheck_cell(ln, rnd({3, 2, 3}, 10), "LayerNorm");
  nn::RMSNorm rn(5, 1e-6, f64);
  rn.weight().set_value(rnd({5}, 11, 0.5, 1.5));
  gradcheck_cell(rn, rnd({3, 5}, 12), "RMSNorm");
}

TEST(NnGrad, DropoutGradientIsTheScaledMask) {
  nn::Dropout d(0.4, 5);
  Tensor x = rnd({6, 7}, 13, 0.5, 1.5);
  Tensor w = rnd({6, 7}, 14);
  // One call gives both the output and the gradient, so they share the mask.
  auto vg = value_and_grad([&](const std::vector<Tensor>& in) { return d(in[0]); }, 0, {}, w);
  ValueAndGrad r = vg({x});
  auto y = r.value.to_vector<double>(), g = r.input_grads[0].to_vector<double>(), wv = w.to_vector<double>();
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(g[i], y[i] != 0 ? wv[i] / 0.6 : 0.0, 1e-12) << i;
  d.set_train(false);
  gradcheck_cell(d, x, "Dropout eval");
}

TEST(NnGrad, Losses) {
  const DType i64 = DType::kInt64;
  Tensor a = rnd({3, 4}, 15), b = rnd({3, 4}, 16);
  Tensor l1b = add(a, rnd({3, 4}, 17, 0.2, 0.8));  // |a - b| away from 0
  for (std::string r : {"mean", "sum", "none"}) {
    test::gradcheck([&](const std::vector<Tensor>& v) { return nn::mse_loss(v[0], v[1], r); }, {a, b}, {}, 1e-6, 1e-6,
                    "mse " + r);
    test::gradcheck([&](const std::vector<Tensor>& v) { return nn::l1_loss(v[0], v[1], r); }, {a, l1b}, {}, 1e-6, 1e-6,
                    "l1 " + r);
    Tensor y01 = rnd({3, 4}, 18, 0, 1);
    Tensor xb = mul(a, 4.0);
    test::gradcheck([&](const std::vector<Tensor>& v) { return nn::binary_cross_entropy_with_logits(v[0], v[1], r); },
                    {xb, y01}, {}, 1e-6, 1e-6, "bce " + r);
    Tensor lab = test::make_tensor({2, 0, 3}, {3}, i64);
    Tensor lab_ign = test::make_tensor({2, -100, 3}, {3}, i64);
    test::gradcheck([&](const std::vector<Tensor>& v) { return nn::cross_entropy(v[0], v[1], r, 0.1); }, {a, lab}, {0},
                    1e-6, 1e-6, "ce " + r);
    test::gradcheck([&](const std::vector<Tensor>& v) { return nn::cross_entropy(v[0], v[1], r); }, {a, lab_ign}, {0},
                    1e-6, 1e-6, "ce ignore " + r);
    Tensor probs = softmax(rnd({3, 4}, 19), 1);
    test::gradcheck([&](const std::vector<Tensor>& v) { return nn::cross_entropy(v[0], v[1], r, 0.2); }, {a, probs}, {},
                    1e-6, 1e-6, "ce probs " + r);
    test::gradcheck([&](const std::vector<Tensor>& v) { return nn::nll_loss(v[0], v[1], r); }, {a, lab}, {0}, 1e-6,
                    1e-6, "nll " + r);
  }
  // Spatial cross entropy [N, C, H, W].
  Tensor xs = rnd({2, 3, 2, 2}, 20);
  Tensor ls = test::make_tensor({0, 2, 1, 1, 2, 2, 0, 1}, {2, 2, 2}, i64);
  test::gradcheck([&](const std::vector<Tensor>& v) { return nn::cross_entropy(v[0], v[1], "mean", 0.1); }, {xs, ls},
                  {0}, 1e-6, 1e-6, "ce spatial");
  // BCE's gradient at x = 0 is sigmoid(0) - y exactly.
  Tensor z = zeros({2}, f64), y = test::make_tensor({0.25, 1}, {2}, f64);
  auto g = value_and_grad([&](const std::vector<Tensor>& v) { return nn::binary_cross_entropy_with_logits(v[0], y, "sum"); })(
      {z});
  test::expect_close(g.input_grads[0], {0.25, -0.5}, "bce grad at 0");
}

TEST(NnGrad, SmallNetworkWeightsThroughValueAndGrad) {
  nn::SequentialCell net({std::make_shared<nn::Dense>(3, 5, true, "silu", 1, f64),
                          std::make_shared<nn::LayerNorm>(std::vector<int64_t>{5}, 1e-5, true, f64),
                          std::make_shared<nn::Dense>(5, 2, true, nullptr, 2, f64)});
  gradcheck_cell(net, rnd({4, 3}, 21), "Dense-LayerNorm-Dense");
  // value_and_grad with the network's parameters as weights.
  Tensor x = rnd({4, 3}, 22);
  Tensor lab = test::make_tensor({0, 1, 1, 0}, {4}, DType::kInt32);
  nn::CrossEntropyLoss loss;
  auto params = net.trainable_params();
  auto vg = value_and_grad([&](const std::vector<Tensor>& in) { return loss(net(in[0]), lab); }, GradPosition::none(),
                           params);
  ValueAndGrad r = vg({x});
  ASSERT_EQ(r.weight_grads.size(), params.size());
  for (size_t i = 0; i < params.size(); ++i) EXPECT_EQ(r.weight_grads[i].shape(), params[i].value().shape());
}

}  // namespace
}  // namespace spore
