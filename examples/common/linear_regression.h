// The chapter's 05_autograd_train workload, shared by the sample, its benchmark and its test: a
// fixed-seed synthetic linear regression (4 inputs, 1 output) fitted by a Dense(4, 1) layer with
// value_and_grad and Adam.
//
// Data: x ~ N(0, 1) drawn with Philox (seed 2024), y = x w* + b* with w* = [0.5, -0.75, 0.25, 1.0]
// and b* = 0.25, computed in float64 and then stored in the training dtype. There is no noise,
// so the loss can fall to the rounding level of that dtype.
#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "spore/autograd.h"
#include "spore/nn/dense.h"
#include "spore/nn/losses.h"
#include "spore/ops.h"
#include "spore/optim.h"

namespace spore::examples {

struct RegressionData {
  Tensor x;                   // [rows, 4]
  Tensor y;                   // [rows, 1]
  std::vector<double> x64;    // the same values in float64 (row-major), for references
  std::vector<double> y64;
};

inline const std::vector<double>& regression_true_weights() {
  static const std::vector<double> w = {0.5, -0.75, 0.25, 1.0};
  return w;
}
inline constexpr double kRegressionTrueBias = 0.25;

inline RegressionData make_regression_data(int64_t rows, DType dtype) {
  RegressionData d;
  // Drawn in float64 and rounded once to the training dtype: x64 are the values actually trained on.
  Tensor x = cast(cast(random_normal({rows, 4}, /*seed=*/2024, 0, 1, DType::kFloat64), dtype), DType::kFloat64);
  d.x64 = x.to_vector<double>();
  const auto& w = regression_true_weights();
  for (int64_t r = 0; r < rows; ++r) {
    double s = kRegressionTrueBias;
    for (int k = 0; k < 4; ++k) s += d.x64[r * 4 + k] * w[k];
    d.y64.push_back(s);
  }
  d.x = cast(x, dtype);
  d.y = cast(Tensor::from_vector(d.y64, Shape{rows, 1}), dtype);
  return d;
}

struct RegressionRun {
  double start_loss = 0;  // before the first update
  double end_loss = 0;    // after the last update
  double seconds = 0;     // the training loop alone
  std::vector<double> losses;  // per step, before that step's update
};

// Trains `net` for `steps` Adam steps at learning rate `lr` on the whole data set (full batch).
// The loss of step i is recorded before its update; end_loss is evaluated after the last one.
inline RegressionRun train_linear_regression(nn::Cell& net, const RegressionData& data, int steps, double lr,
                                             const std::function<void(int, double)>& on_step = {}) {
  optim::Adam opt(net.trainable_params(), lr);
  auto loss_fn = [&net](const std::vector<Tensor>& in) { return nn::mse_loss(net(in[0]), in[1]); };
  auto grad_fn = value_and_grad(loss_fn, GradPosition::none(), net.trainable_params());
  RegressionRun run;
  run.losses.reserve(steps);
  const auto t0 = std::chrono::steady_clock::now();
  for (int s = 0; s < steps; ++s) {
    ValueAndGrad vg = grad_fn({data.x, data.y});
    opt(vg.weight_grads);
    run.losses.push_back(vg.value.item<double>());
    if (on_step) on_step(s, run.losses.back());
  }
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  run.start_loss = run.losses.empty() ? loss_fn({data.x, data.y}).item<double>() : run.losses.front();
  run.end_loss = loss_fn({data.x, data.y}).item<double>();
  return run;
}

}  // namespace spore::examples
