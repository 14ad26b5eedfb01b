// Numeric Jacobian check (NOTE [Autodiff]): analytic gradients from value_and_grad against central
// finite differences, both in float64. A random projection makes any output a scalar, so one
// backward pass checks the whole vector-Jacobian product.
#pragma once
#include <gtest/gtest.h>

#include <random>

#include "spore/autograd.h"
#include "spore/ops.h"

namespace spore::test {

inline void gradcheck(const TensorFn& fn, const std::vector<Tensor>& inputs,
                      std::vector<int> positions = {}, double eps = 1e-6, double tol = 1e-6,
                      const std::string& what = "") {
  if (positions.empty())
    for (int i = 0; i < (int)inputs.size(); ++i)
      if (is_floating(inputs[i].dtype())) positions.push_back(i);
  for (int p : positions) ASSERT_EQ(inputs[p].dtype(), DType::kFloat64) << what << ": gradcheck runs in float64";

  Tensor probe_out = fn(inputs);
  std::mt19937 gen(1234);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<double> w((size_t)probe_out.numel());
  for (double& x : w) x = dist(gen);
  Tensor weights = Tensor::from_vector(w, probe_out.shape());
  TensorFn scalar_fn = [&](const std::vector<Tensor>& xs) { return sum(mul(fn(xs), weights)); };

  GradPosition gp = GradPosition::none();
  gp.positions = positions;
  ValueAndGrad vg = value_and_grad(scalar_fn, gp)(inputs);
  ASSERT_EQ(vg.input_grads.size(), positions.size());

  for (size_t k = 0; k < positions.size(); ++k) {
    int p = positions[k];
    std::vector<double> x = inputs[p].contiguous().to_vector<double>();
    std::vector<double> analytic = vg.input_grads[k].to_vector<double>();
    ASSERT_EQ(vg.input_grads[k].shape(), inputs[p].shape()) << what;
    for (size_t i = 0; i < x.size(); ++i) {
      auto eval = [&](double v) {
        std::vector<double> xi = x;
        xi[i] = v;
        std::vector<Tensor> in = inputs;
        in[p] = Tensor::from_vector(xi, inputs[p].shape());
        return scalar_fn(in).item<double>();
      };
      double numeric = (eval(x[i] + eps) - eval(x[i] - eps)) / (2 * eps);
      EXPECT_NEAR(analytic[i], numeric, tol * (1 + std::abs(numeric)))
          << what << ": d/d input" << p << "[" << i << "]";
    }
  }
}

}  // namespace spore::test
