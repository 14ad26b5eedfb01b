// Backward rule of matmul (NOTE [Matmul gradient] in src/ops/matmul.cc): every NumPy operand
// form (1-D, 2-D, batched, broadcast batches) against central differences in float64, a
// hand-computed case, and the rule in low precision and with mixed operand dtypes.
#include <gtest/gtest.h>

#include <string>

#include "autograd/gradcheck.h"
#include "spore/autograd.h"
#include "spore/op_registry.h"
#include "spore/ops.h"
#include "test_util.h"

namespace spore::test {
namespace {

const DType f64 = DType::kFloat64;

Tensor rnd(const std::vector<int64_t>& shape, uint32_t seed, DType t = f64) {
  Shape s(shape);
  return make_tensor(random_values(s.numel(), t, -1, 1, seed), s, t);
}

using Shapes = std::pair<std::vector<int64_t>, std::vector<int64_t>>;

const std::vector<Shapes> kShapes = {
    {{3, 4}, {4, 2}},           // matrix @ matrix
    {{4}, {4, 2}},              // vector @ matrix
    {{3, 4}, {4}},              // matrix @ vector
    {{4}, {4}},                 // vector @ vector: a 0-d result
    {{2, 3, 4}, {2, 4, 5}},     // batched
    {{2, 3, 4}, {4, 5}},        // batch @ matrix: b is shared by the batch
    {{3, 4}, {2, 4, 5}},        // matrix @ batch
    {{4}, {2, 4, 5}},           // vector @ batch
    {{2, 3, 4}, {4}},           // batch @ vector
    {{2, 1, 3, 4}, {5, 4, 2}},  // broadcast batches: [2, 1] with [5]
    {{1, 3, 4}, {2, 4, 1}},     // broadcast batch of extent 1 and a one-column matrix
};

// Which ops have rules is checked registry-wide (tests/core/op_coverage_test.cc).

TEST(MatmulGrad, EveryOperandFormMatchesFiniteDifferences) {
  uint32_t seed = 1;
  for (const auto& [sa, sb] : kShapes) {
    Tensor a = rnd(sa, seed++), b = rnd(sb, seed++);
    gradcheck([](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); }, {a, b}, {}, 1e-6,
              1e-6, "matmul " + a.shape().str() + " @ " + b.shape().str());
  }
}

// By hand: for out = a @ b and loss sum(out), da[i][k] = sum_j b[k][j], db[k][j] = sum_i a[i][k].
TEST(MatmulGrad, HandComputedValues) {
  Tensor a = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  Tensor b = Tensor::from_vector<double>({1, -1, 2, 0, 0.5, 3}, Shape{3, 2});
  auto vg = value_and_grad([](const std::vector<Tensor>& in) { return sum(matmul(in[0], in[1])); },
                           GradPosition{0, 1})({a, b});
  expect_close(vg.input_grads[0], {0, 2, 3.5, 0, 2, 3.5}, "da");
  expect_close(vg.input_grads[1], {5, 5, 7, 7, 9, 9}, "db");
  // vector . vector: the gradients are the other operand scaled by the output gradient.
  Tensor u = Tensor::from_vector<double>({1, 2, 3}, Shape{3});
  Tensor v = Tensor::from_vector<double>({-1, 0.5, 2}, Shape{3});
  auto vd =
      value_and_grad([](const std::vector<Tensor>& in) { return mul(matmul(in[0], in[1]), 3.0); },
                     GradPosition{0, 1})({u, v});
  expect_close(vd.input_grads[0], {-3, 1.5, 6}, "dot du");
  expect_close(vd.input_grads[1], {3, 6, 9}, "dot dv");
}

TEST(MatmulGrad, RuleWorksInLowPrecisionAndMixedDtypes) {
  uint32_t seed = 100;
  for (DType t : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    const Tol tol = t == DType::kFloat32   ? Tol{1e-5, 1e-5}
                    : t == DType::kFloat16 ? Tol{2e-2, 2e-2}
                                           : Tol{1e-1, 5e-2};
    for (const auto& [sa, sb] : kShapes) {
      Tensor a = rnd(sa, seed++, t), b = rnd(sb, seed++, t);
      auto run = [](const Tensor& x, const Tensor& y) {
        return value_and_grad(
            [](const std::vector<Tensor>& in) { return sum(matmul(in[0], in[1])); },
            GradPosition{0, 1})({x, y});
      };
      auto got = run(a, b), ref = run(a.to(f64), b.to(f64));
      for (int k = 0; k < 2; ++k) {
        EXPECT_EQ(got.input_grads[k].dtype(), t);
        expect_close(got.input_grads[k], ref.input_grads[k].to_vector<double>(), tol,
                     "matmul " + a.shape().str() + " @ " + b.shape().str() + " d" +
                         (k ? "b" : "a") + " in " + dtype_name(t));
      }
    }
  }
  // float16 @ float32 computes in float32; each operand's gradient comes back in its own dtype.
  Tensor h = rnd({3, 4}, 200, DType::kFloat16), f = rnd({4, 2}, 201, DType::kFloat32);
  auto vg = value_and_grad([](const std::vector<Tensor>& in) { return sum(matmul(in[0], in[1])); },
                           GradPosition{0, 1})({h, f});
  EXPECT_EQ(vg.input_grads[0].dtype(), DType::kFloat16);
  EXPECT_EQ(vg.input_grads[1].dtype(), DType::kFloat32);
}

// A small network end to end: tanh(x @ w1 + b1) @ w2, mean squared, through matmul, add
// (broadcast bias), tanh, sub, mul and mean.
TEST(MatmulGrad, TwoLayerNetwork) {
  Tensor x = rnd({5, 3}, 300), w1 = rnd({3, 4}, 301), b1 = rnd({4}, 302), w2 = rnd({4}, 303),
         y = rnd({5}, 304);
  gradcheck(
      [&](const std::vector<Tensor>& in) {
        Tensor h = tanh(add(matmul(in[0], in[1]), in[2]));
        Tensor d = sub(matmul(h, in[3]), y);
        return mean(mul(d, d));
      },
      {x, w1, b1, w2}, {1, 2, 3}, 1e-6, 1e-6, "two-layer network");
}

}  // namespace
}  // namespace spore::test
