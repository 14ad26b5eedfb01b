// Training parity with PyTorch: tools/make_parity_fixture.py trained two small networks in
// PyTorch (Debian's python3-torch) and stored their initial weights, data, per-step losses and
// final weights in tests/fixtures/parity/. Here Spore builds the same networks, starts from the
// same weights, trains on the same data with the same optimizer, and must reproduce the loss
// curve and the final weights. Both run in float32; only summation orders differ, so the stated
// tolerance (kLossTol relative, kWeightTol absolute) is a few float32 roundings amplified over the
// steps, far below any real difference in a gradient or an update rule.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

#include "spore/autograd.h"
#include "spore/checkpoint.h"
#include "spore/nn/activation.h"
#include "spore/nn/conv.h"
#include "spore/nn/dense.h"
#include "spore/nn/losses.h"
#include "spore/nn/normalization.h"
#include "spore/ops.h"
#include "spore/optim.h"

namespace spore {
namespace {

constexpr double kLossTol = 1e-5;    // |spore - torch| <= kLossTol * max(1, |torch|), every step
constexpr double kWeightTol = 1e-4;  // max |spore - torch| over the final weights

SafeTensors fixture(const std::string& name) {
  return load_safetensors(std::string(SPORE_SOURCE_DIR) + "/tests/fixtures/parity/" + name);
}

void set_initial_weights(nn::Cell& net, const SafeTensors& f) {
  int trainable = 0;
  for (auto& [name, p] : net.named_parameters()) {
    if (!p.requires_grad()) continue;  // BatchNorm's running statistics: both start at 0 and 1
    ASSERT_TRUE(f.contains("init." + name)) << name;
    p.set_value(f.at("init." + name).clone());
    ++trainable;
  }
  int stored = 0;
  for (auto& [name, t] : f.tensors) stored += name.rfind("init.", 0) == 0;
  ASSERT_EQ(trainable, stored) << "the network and the fixture disagree on the parameters";
}

void train_and_compare(nn::Cell& net, optim::Optimizer& opt, const SafeTensors& f, double label_smoothing) {
  const Tensor x = f.at("data.x"), y = f.at("data.y");
  const std::vector<double> want = f.at("losses").to_vector<double>();
  auto loss_fn = [&](const std::vector<Tensor>& in) { return nn::cross_entropy(net(in[0]), in[1], "mean", label_smoothing); };
  auto grad_fn = value_and_grad(loss_fn, GradPosition::none(), net.trainable_params());
  net.set_train(true);
  for (size_t s = 0; s < want.size(); ++s) {
    ValueAndGrad vg = grad_fn({x, y});
    const double got = vg.value.item<double>();
    ASSERT_NEAR(got, want[s], kLossTol * std::max(1.0, std::abs(want[s]))) << "loss at step " << s;
    opt(vg.weight_grads);
  }
  for (auto& [name, p] : net.named_parameters()) {
    if (!p.requires_grad()) continue;
    EXPECT_LE(max_abs_diff(p.value(), f.at("final." + name)), kWeightTol) << "final " << name;
  }
}

TEST(TrainingParity, MlpWithLayerNormGeluTanhAndAdamW) {
  SafeTensors f = fixture("mlp.safetensors");
  nn::SequentialCell net({std::make_shared<nn::Dense>(10, 32), std::make_shared<nn::LayerNorm>(std::vector<int64_t>{32}),
                          std::make_shared<nn::GELU>(false), std::make_shared<nn::Dense>(32, 32),
                          std::make_shared<nn::Tanh>(), std::make_shared<nn::Dense>(32, 4)});
  set_initial_weights(net, f);
  optim::AdamW opt(net.trainable_params(), 1e-2, 0.9, 0.999, 1e-8, 1e-2);
  train_and_compare(net, opt, f, /*label_smoothing=*/0.1);
}

TEST(TrainingParity, CnnWithBatchNormPoolsGroupedConvAndNesterovSgd) {
  SafeTensors f = fixture("cnn.safetensors");
  auto conv = [](int64_t in, int64_t out, int64_t groups) {
    nn::Conv2dConfig c;
    c.pad_mode = "pad";
    c.padding = {1};
    c.groups = groups;
    c.has_bias = true;
    return std::make_shared<nn::Conv2d>(in, out, std::vector<int64_t>{3, 3}, c);
  };
  nn::SequentialCell net({conv(1, 4, 1), std::make_shared<nn::BatchNorm2d>(4), std::make_shared<nn::ReLU>(),
                          std::make_shared<nn::MaxPool2d>(std::vector<int64_t>{2, 2}), conv(4, 6, 2),
                          std::make_shared<nn::ReLU>(), std::make_shared<nn::AvgPool2d>(std::vector<int64_t>{2, 2}),
                          std::make_shared<nn::Flatten>(), std::make_shared<nn::Dense>(24, 3)});
  set_initial_weights(net, f);
  optim::SGD opt(net.trainable_params(), 0.05, 0.9, 1e-3, /*nesterov=*/true);
  train_and_compare(net, opt, f, /*label_smoothing=*/0.0);
}

}  // namespace
}  // namespace spore
