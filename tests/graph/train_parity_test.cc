// Parity as a standing check (issue 9): the models of the examples and benchmarks trained step
// by step eagerly and with the whole training step (forward, backward, optimizer update) compiled
// by jit give the same losses and parameters. Today's pass pipeline reorders no floating-point
// work, so the comparison is bitwise for every dtype.
#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "common/digits_cnn.h"
#include "common/linear_regression.h"
#include "spore/jit.h"
#include "spore/nn/dense.h"
#include "spore/nn/losses.h"
#include "spore/ops.h"
#include "spore/optim.h"

namespace spore {
namespace {

using MakeNet = std::function<std::shared_ptr<nn::Cell>()>;
using MakeOpt = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Parameter>)>;
using Loss = std::function<Tensor(const Tensor&, const Tensor&)>;

struct Run {
  std::vector<double> losses;
  std::vector<std::vector<uint8_t>> params;
  JitStats stats;
};

Run train(const MakeNet& make_net, const MakeOpt& make_opt, const Loss& loss, const Tensor& x, const Tensor& y,
          int steps, bool compiled) {
  std::shared_ptr<nn::Cell> net = make_net();
  std::unique_ptr<optim::Optimizer> opt = make_opt(net->trainable_params());
  auto loss_fn = [&](const std::vector<Tensor>& in) { return loss((*net)(in[0]), in[1]); };
  auto grad_fn = value_and_grad(loss_fn, GradPosition::none(), net->trainable_params());
  TensorFn step = [&](const std::vector<Tensor>& in) {
    ValueAndGrad vg = grad_fn(in);
    (*opt)(vg.weight_grads);
    return vg.value;
  };
  JitFunction jitted = jit(step);
  Run r;
  for (int s = 0; s < steps; ++s) {
    Tensor l = compiled ? jitted.call1({x, y}) : step({x, y});
    r.losses.push_back(l.item<double>());
  }
  for (const Parameter& p : net->parameters()) r.params.push_back(p.value().to_bytes());
  r.stats = jitted.stats();
  EXPECT_EQ(opt->steps_taken(), steps);
  return r;
}

void expect_same_training(const MakeNet& make_net, const MakeOpt& make_opt, const Loss& loss, const Tensor& x,
                          const Tensor& y, int steps) {
  Run eager = train(make_net, make_opt, loss, x, y, steps, false);
  Run graph = train(make_net, make_opt, loss, x, y, steps, true);
  EXPECT_EQ(graph.stats.misses, 1);
  EXPECT_EQ(graph.stats.hits, steps - 1);
  ASSERT_EQ(eager.losses.size(), graph.losses.size());
  for (size_t s = 0; s < eager.losses.size(); ++s) ASSERT_EQ(eager.losses[s], graph.losses[s]) << "step " << s;
  ASSERT_EQ(eager.params.size(), graph.params.size());
  for (size_t p = 0; p < eager.params.size(); ++p) EXPECT_EQ(eager.params[p], graph.params[p]) << "parameter " << p;
  // Training did something: the loss moved.
  EXPECT_NE(eager.losses.front(), eager.losses.back());
}

MakeOpt adam(double lr) {
  return [lr](std::vector<Parameter> p) { return std::make_unique<optim::Adam>(std::move(p), lr); };
}

Tensor mse(const Tensor& p, const Tensor& y) { return nn::mse_loss(p, y); }
Tensor xent(const Tensor& p, const Tensor& y) { return nn::cross_entropy(p, y); }

// The chapter's 05 loop (examples/common/linear_regression.h): Dense(4, 1) and Adam, 200 steps.
TEST(TrainParity, ChapterRegressionFloat32) {
  examples::RegressionData d = examples::make_regression_data(64, DType::kFloat32);
  expect_same_training([] { return std::make_shared<nn::Dense>(4, 1, true, nullptr, 1); }, adam(0.05), mse, d.x, d.y,
                       200);
}

TEST(TrainParity, ChapterRegressionFloat16Parameters) {
  examples::RegressionData d = examples::make_regression_data(64, DType::kFloat16);
  expect_same_training([] { return std::make_shared<nn::Dense>(4, 1, true, nullptr, 1, DType::kFloat16); }, adam(0.05),
                       mse, d.x, d.y, 200);
}

TEST(TrainParity, ChapterRegressionToFloat16OverFloat32Masters) {
  examples::RegressionData d = examples::make_regression_data(64, DType::kFloat32);
  expect_same_training(
      [] {
        auto l = std::make_shared<nn::Dense>(4, 1, true, nullptr, 1);
        l->to_float(DType::kFloat16);
        return l;
      },
      adam(0.05), mse, d.x, d.y, 100);
}

std::shared_ptr<nn::Cell> small_mlp(bool bf16) {
  auto net = std::make_shared<nn::SequentialCell>(std::vector<nn::CellPtr>{
      std::make_shared<nn::Dense>(64, 48, true, "relu", 1), std::make_shared<nn::Dense>(48, 48, true, "relu", 2),
      std::make_shared<nn::Dense>(48, 10, true, nullptr, 3)});
  if (bf16) net->to_float(DType::kBFloat16);
  return net;
}

// The bench MLP's shape of network (bench/train_bench.cc, smaller), Adam and SGD with momentum.
TEST(TrainParity, MlpFloat32AdamAndSgdMomentum) {
  Tensor x = random_normal({32, 64}, 5);
  Tensor y = cast(mul(random_uniform({32}, 6), 10.0), DType::kInt64);
  expect_same_training([] { return small_mlp(false); }, adam(1e-3), xent, x, y, 20);
  expect_same_training([] { return small_mlp(false); },
                       [](std::vector<Parameter> p) {
                         return std::make_unique<optim::SGD>(std::move(p), 0.05, 0.9, 1e-4, true);
                       },
                       xent, x, y, 20);
}

TEST(TrainParity, MlpBFloat16Mixed) {
  Tensor x = random_normal({32, 64}, 5);
  Tensor y = cast(mul(random_uniform({32}, 6), 10.0), DType::kInt64);
  expect_same_training([] { return small_mlp(true); }, adam(1e-3), xent, x, y, 20);
}

// The bench's and examples/train's digits CNN (examples/common/digits_cnn.h).
TEST(TrainParity, DigitsCnn) {
  Tensor x = random_uniform({16, 1, 8, 8}, 7);
  Tensor y = cast(mul(random_uniform({16}, 8), 10.0), DType::kInt64);
  expect_same_training([] { return examples::make_digits_cnn(0); }, adam(2e-3), xent, x, y, 10);
}

// A learning-rate schedule is host state too: each compiled step reads the rate of its step.
TEST(TrainParity, ScheduledLearningRate) {
  examples::RegressionData d = examples::make_regression_data(64, DType::kFloat32);
  expect_same_training([] { return std::make_shared<nn::Dense>(4, 1, true, nullptr, 1); },
                       [](std::vector<Parameter> p) {
                         return std::make_unique<optim::Adam>(std::move(p), optim::cosine_lr(0.05, 50, 0.001));
                       },
                       mse, d.x, d.y, 60);
}

}  // namespace
}  // namespace spore
