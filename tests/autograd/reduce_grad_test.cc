// Backward rules of the reductions (NOTE [Reduction gradients] in src/ops/reduce.cc) and of
// softmax/log_softmax (NOTE [Softmax gradients] in src/ops/norm.cc): central differences in
// float64 over several axis sets with and without keepdims, ties and hand-computed values, and
// the rules in low precision.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "autograd/gradcheck.h"
#include "spore/autograd.h"
#include "spore/op_registry.h"
#include "spore/ops.h"
#include "test_util.h"

namespace spore::test {
namespace {

const DType f64 = DType::kFloat64;
using Axes = std::vector<int64_t>;

Tensor rnd(const std::vector<int64_t>& shape, double lo, double hi, uint32_t seed, DType t = f64) {
  Shape s(shape);
  return make_tensor(random_values(s.numel(), t, lo, hi, seed), s, t);
}

std::string axes_str(const Axes& axes, bool keepdims) {
  std::string s = "axes {";
  for (int64_t a : axes) s += std::to_string(a) + ",";
  return s + "} keepdims " + (keepdims ? "true" : "false");
}

// The gradient of sum(f(x) * w) with all-ones weights.
Tensor grad_of_sum(const std::function<Tensor(const Tensor&)>& f, const Tensor& x) {
  return value_and_grad([&](const std::vector<Tensor>& in) { return sum(f(in[0])); })({x})
      .input_grads[0];
}

const std::vector<Axes> kAxisSets = {{}, {0}, {1}, {-1}, {0, 2}, {2, 0, 1}, {1, 2}};

// Which ops have rules is checked registry-wide (tests/core/op_coverage_test.cc).

TEST(ReduceGrad, SumMeanMaxMinMatchFiniteDifferences) {
  // Random values are distinct with probability 1, so max/min have no ties here.
  Tensor x = rnd({2, 3, 4}, -2, 2, 1);
  using R = Tensor (*)(const Tensor&, const Axes&, bool);
  const std::vector<std::pair<const char*, R>> ops = {
      {"sum", [](const Tensor& t, const Axes& a, bool k) { return sum(t, a, k); }},
      {"mean", [](const Tensor& t, const Axes& a, bool k) { return mean(t, a, k); }},
      {"max", [](const Tensor& t, const Axes& a, bool k) { return max(t, a, k); }},
      {"min", [](const Tensor& t, const Axes& a, bool k) { return min(t, a, k); }},
  };
  for (const auto& [name, f] : ops) {
    const auto& fn = f;  // clang 14 cannot capture a structured binding in a lambda
    for (const Axes& axes : kAxisSets)
      for (bool keep : {false, true})
        gradcheck([&](const std::vector<Tensor>& in) { return fn(in[0], axes, keep); }, {x}, {},
                  1e-6, 1e-6, std::string(name) + " " + axes_str(axes, keep));
  }
}

TEST(ReduceGrad, VarMatchesFiniteDifferences) {
  Tensor x = rnd({2, 3, 4}, -2, 2, 2);
  for (int64_t correction : {0, 1, 2})
    for (const Axes& axes : kAxisSets)
      for (bool keep : {false, true}) {
        int64_t count = 1;
        for (int64_t a : axes) count *= x.shape()[(int)((a + 3) % 3)];
        if (axes.empty()) count = x.numel();
        if (count <= correction) continue;  // the divisor count - correction must be positive
        gradcheck([&](const std::vector<Tensor>& in) { return var(in[0], axes, correction, keep); },
                  {x}, {}, 1e-6, 1e-6,
                  "var correction " + std::to_string(correction) + " " + axes_str(axes, keep));
      }
}

TEST(ReduceGrad, ZeroDimAndOneElementInputs) {
  Tensor s = rnd({}, -2, 2, 3);
  for (auto f : {+[](const Tensor& t) { return sum(t); }, +[](const Tensor& t) { return mean(t); },
                 +[](const Tensor& t) { return max(t); }})
    gradcheck([&](const std::vector<Tensor>& in) { return f(in[0]); }, {s});
  Tensor one = rnd({1, 1}, -2, 2, 4);
  gradcheck([&](const std::vector<Tensor>& in) { return mean(in[0], {1}, true); }, {one});
}

// By hand: d sum / dx = 1, d mean / dx = 1/count, d var / dx = 2 (x - mean) / (n - correction).
TEST(ReduceGrad, HandComputedValues) {
  Tensor x = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  expect_close(grad_of_sum([](const Tensor& t) { return sum(t, {1}); }, x),
               std::vector<double>(6, 1.0), "sum");
  expect_close(grad_of_sum([](const Tensor& t) { return mean(t, {0}); }, x),
               std::vector<double>(6, 0.5), "mean axis 0");
  expect_close(grad_of_sum([](const Tensor& t) { return mean(t); }, x),
               std::vector<double>(6, 1.0 / 6), "mean all");
  // Rows {1,2,3} and {4,5,6}: mean 2 and 5, n - 1 = 2, so 2 (x - mean) / 2 = x - mean.
  expect_close(grad_of_sum([](const Tensor& t) { return var(t, {1}); }, x), {-1, 0, 1, -1, 0, 1},
               "var unbiased");
  expect_close(grad_of_sum([](const Tensor& t) { return var(t, {1}, 0); }, x),
               {-2.0 / 3, 0, 2.0 / 3, -2.0 / 3, 0, 2.0 / 3}, "var population");
}

// torch.amax/amin: the gradient is split evenly among the elements equal to the extreme.
TEST(ReduceGrad, MaxMinSplitTheGradientAmongTies) {
  Tensor x = Tensor::from_vector<double>({1, 3, 3, 2, 5, 5, 5, 0}, Shape{2, 4});
  expect_close(grad_of_sum([](const Tensor& t) { return max(t, {1}); }, x),
               {0, 0.5, 0.5, 0, 1.0 / 3, 1.0 / 3, 1.0 / 3, 0}, "max rows");
  expect_close(grad_of_sum([](const Tensor& t) { return max(t); }, x),
               {0, 0, 0, 0, 1.0 / 3, 1.0 / 3, 1.0 / 3, 0}, "max all");
  expect_close(grad_of_sum([](const Tensor& t) { return min(t, {0}, true); }, x),
               {1, 1, 1, 0, 0, 0, 0, 1}, "min columns");
  Tensor y = Tensor::from_vector<double>({2, 1, 1, 4}, Shape{4});
  expect_close(grad_of_sum([](const Tensor& t) { return min(t); }, y), {0, 0.5, 0.5, 0},
               "min ties");
}

TEST(ReduceGrad, IntegerReductionsOnTheSideOfAFloatPath) {
  // sum of an integer tensor joins a float computation: x still gets its gradient.
  Tensor x = rnd({3}, -2, 2, 5);
  Tensor k = Tensor::from_vector<int64_t>({1, 2, 3}, Shape{3});
  auto vg = value_and_grad(
      [&](const std::vector<Tensor>& in) { return sum(mul(in[0], cast(sum(k), f64))); })({x});
  expect_close(vg.input_grads[0], std::vector<double>(3, 6.0), "x * sum(k)");
}

TEST(ReduceGrad, RulesWorkInLowPrecision) {
  uint32_t seed = 50;
  using R = std::function<Tensor(const Tensor&)>;
  const std::vector<std::pair<const char*, R>> ops = {
      {"sum",
       [](const Tensor& t) {
         return sum(t, {0, 2});
       }},
      {"mean", [](const Tensor& t) { return mean(t, {1}, true); }},
      {"max", [](const Tensor& t) { return max(t, {2}); }},
      {"min",
       [](const Tensor& t) {
         return min(t, {0, 1});
       }},
      {"var", [](const Tensor& t) { return var(t, {2}); }},
      {"softmax", [](const Tensor& t) { return softmax(t, 1); }},
      {"log_softmax", [](const Tensor& t) { return log_softmax(t, -1); }},
  };
  for (DType t : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    const Tol tol = t == DType::kFloat32   ? Tol{1e-5, 1e-5}
                    : t == DType::kFloat16 ? Tol{1e-2, 1e-2}
                                           : Tol{6e-2, 6e-2};
    for (const auto& [name, op] : ops) {
      const auto& f = op;  // clang 14 cannot capture a structured binding in a lambda
      Tensor x = rnd({2, 3, 4}, -2, 2, seed++, t);
      Tensor probe = f(x);
      Tensor w = rnd(probe.shape().to_vector(), -1, 1, seed++, t);
      auto run = [&](const Tensor& xx, const Tensor& ww) {
        return value_and_grad(
                   [&](const std::vector<Tensor>& in) { return sum(mul(f(in[0]), ww)); })({xx})
            .input_grads[0];
      };
      Tensor g = run(x, w);
      EXPECT_EQ(g.dtype(), t) << name;
      expect_close(g, run(x.to(f64), w.to(f64)).to_vector<double>(), tol,
                   std::string(name) + " in " + dtype_name(t));
    }
  }
}

// ---- softmax and log_softmax --------------------------------------------------------------

TEST(SoftmaxGrad, MatchFiniteDifferencesOnEveryAxis) {
  Tensor x = rnd({2, 3, 4}, -3, 3, 60);
  for (int64_t axis : {0, 1, 2, -1}) {
    gradcheck([&](const std::vector<Tensor>& in) { return softmax(in[0], axis); }, {x}, {}, 1e-6,
              1e-6, "softmax axis " + std::to_string(axis));
    gradcheck([&](const std::vector<Tensor>& in) { return log_softmax(in[0], axis); }, {x}, {},
              1e-6, 1e-6, "log_softmax axis " + std::to_string(axis));
  }
}

// By hand: for softmax p, d(sum(w * log_softmax(x)))/dx = w - p * sum(w), which stays finite
// when p underflows (the rule must not divide by the softmax).
TEST(SoftmaxGrad, LogSoftmaxStaysFiniteForExtremeLogits) {
  Tensor x = Tensor::from_vector<float>({1000, 0, -1000}, Shape{3});
  Tensor w = Tensor::from_vector<float>({1, 2, 3}, Shape{3});
  auto vg = value_and_grad(
      [&](const std::vector<Tensor>& in) { return sum(mul(log_softmax(in[0]), w)); })({x});
  // p = {1, e^-1000, e^-2000} = {1, 0, 0} in float32; sum(w) = 6.
  expect_close(vg.input_grads[0], {1 - 6.0, 2, 3}, "log_softmax extreme");
  // softmax: d(sum(w * p))/dx = p * (w - sum(w * p)) = {1 * (1 - 1), 0, 0}.
  auto vs = value_and_grad(
      [&](const std::vector<Tensor>& in) { return sum(mul(softmax(in[0]), w)); })({x});
  expect_close(vs.input_grads[0], {0, 0, 0}, "softmax extreme");
}

TEST(SoftmaxGrad, CrossEntropyThroughSeveralRules) {
  // mean over the batch of -sum(onehot * log_softmax(logits)): gradient (softmax - onehot) / n.
  Tensor logits = rnd({4, 5}, -2, 2, 61);
  std::vector<double> hot(20, 0.0);
  for (int i = 0; i < 4; ++i) hot[i * 5 + (i * 2) % 5] = 1;
  Tensor onehot = Tensor::from_vector(hot, Shape{4, 5});
  auto loss = [&](const std::vector<Tensor>& in) {
    return neg(mean(sum(mul(log_softmax(in[0], 1), onehot), {1})));
  };
  gradcheck(loss, {logits});
  Tensor g = value_and_grad(loss)({logits}).input_grads[0];
  std::vector<double> p = softmax(logits, 1).to_vector<double>(), want;
  for (size_t i = 0; i < p.size(); ++i) want.push_back((p[i] - hot[i]) / 4);
  expect_close(g, want, "cross entropy");
}

}  // namespace
}  // namespace spore::test
