// Backward rules of the elementwise ops (NOTE [Elementwise gradients] in src/ops/elementwise.cc):
// every rule against central differences in float64 (gradcheck.h), broadcasting and scalar
// operands, the conventions at kinks against hand-computed values, and the rules in float32,
// float16 and bfloat16 against the float64 gradient of the same values.
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

Tensor rnd(const std::vector<int64_t>& shape, double lo, double hi, uint32_t seed, DType t = f64) {
  Shape s(shape);
  return make_tensor(random_values(s.numel(), t, lo, hi, seed), s, t);
}

// Random values in [lo, hi] kept at least 0.1 away from each kink, so that central differences
// never straddle one.
Tensor rnd_away(const std::vector<int64_t>& shape, double lo, double hi, uint32_t seed,
                const std::vector<double>& kinks, DType t = f64) {
  Shape s(shape);
  std::vector<double> v = random_values(s.numel(), f64, lo, hi, seed);
  for (double& x : v)
    for (double k : kinks)
      if (std::abs(x - k) < 0.1) x = k + (x < k ? -0.2 : 0.2);
  // Rounded to t: references are computed from the rounded values.
  return cast(Tensor::from_vector(v, s), t);
}

using Unary = std::function<Tensor(const Tensor&)>;
using Binary = std::function<Tensor(const Tensor&, const Tensor&)>;

struct UnaryCase {
  const char* name;
  Unary f;
  double lo, hi;
  std::vector<double> kinks;
};

std::vector<UnaryCase> unary_cases() {
  return {
      {"neg", [](const Tensor& x) { return neg(x); }, -2, 2, {}},
      {"abs", [](const Tensor& x) { return abs(x); }, -2, 2, {0}},
      {"exp", [](const Tensor& x) { return exp(x); }, -2, 2, {}},
      {"log", [](const Tensor& x) { return log(x); }, 0.5, 3, {}},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }, 0.5, 3, {}},
      {"rsqrt", [](const Tensor& x) { return rsqrt(x); }, 0.5, 3, {}},
      {"sin", [](const Tensor& x) { return sin(x); }, -3, 3, {}},
      {"cos", [](const Tensor& x) { return cos(x); }, -3, 3, {}},
      {"tanh", [](const Tensor& x) { return tanh(x); }, -2, 2, {}},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, -4, 4, {}},
      {"erf", [](const Tensor& x) { return erf(x); }, -2, 2, {}},
      {"relu", [](const Tensor& x) { return relu(x); }, -2, 2, {0}},
      {"relu6", [](const Tensor& x) { return relu6(x); }, -2, 8, {0, 6}},
      {"gelu", [](const Tensor& x) { return gelu(x); }, -3, 3, {}},
      {"gelu_tanh", [](const Tensor& x) { return gelu(x, true); }, -3, 3, {}},
      {"silu", [](const Tensor& x) { return silu(x); }, -4, 4, {}},
      {"copy", [](const Tensor& x) { return x.clone(); }, -2, 2, {}},
  };
}

struct BinaryCase {
  const char* name;
  Binary f;
  double lo_a, hi_a, lo_b, hi_b;  // operand ranges: away from poles and from log(<=0)
};

std::vector<BinaryCase> binary_cases() {
  return {
      {"add", [](const Tensor& a, const Tensor& b) { return add(a, b); }, -2, 2, -2, 2},
      {"sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); }, -2, 2, -2, 2},
      {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }, -2, 2, -2, 2},
      {"div", [](const Tensor& a, const Tensor& b) { return div(a, b); }, -2, 2, 0.5, 2},
      {"pow", [](const Tensor& a, const Tensor& b) { return pow(a, b); }, 0.5, 2, -2, 2},
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }, -2, 2, -2, 2},
      {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }, -2, 2, -2, 2},
  };
}

// The gradient of sum(f(x) * w) for x in x's dtype.
Tensor grad_of(const Unary& f, const Tensor& x, const Tensor& w) {
  return value_and_grad([&](const std::vector<Tensor>& in) { return sum(mul(f(in[0]), w)); })({x})
      .input_grads[0];
}

// Which ops have rules is checked registry-wide (tests/core/op_coverage_test.cc), and every
// differentiable op is gradient-checked from the registry's samples (registry_grad_test.cc);
// the tests below probe each rule's special points.

TEST(ElementwiseGrad, UnaryOpsMatchFiniteDifferences) {
  uint32_t seed = 10;
  for (const UnaryCase& c : unary_cases()) {
    Tensor x = rnd_away({3, 4}, c.lo, c.hi, seed++, c.kinks);
    gradcheck([&](const std::vector<Tensor>& in) { return c.f(in[0]); }, {x}, {}, 1e-6, 1e-6,
              c.name);
  }
}

TEST(ElementwiseGrad, BinaryOpsMatchFiniteDifferences) {
  uint32_t seed = 100;
  for (const BinaryCase& c : binary_cases()) {
    Tensor a = rnd({2, 3}, c.lo_a, c.hi_a, seed++), b = rnd({2, 3}, c.lo_b, c.hi_b, seed++);
    gradcheck([&](const std::vector<Tensor>& in) { return c.f(in[0], in[1]); }, {a, b}, {}, 1e-6,
              1e-6, c.name);
  }
}

// The rules return gradients of the broadcast shape; the tape must reduce them to each operand.
TEST(ElementwiseGrad, BroadcastOperandsGetReducedGradients) {
  uint32_t seed = 200;
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{3, 1}, {4}}, {{2, 3, 4}, {3, 1}}, {{}, {2, 3}}, {{2, 1, 3}, {1, 4, 1}}};
  for (const BinaryCase& c : binary_cases())
    for (const auto& [sa, sb] : shapes) {
      Tensor a = rnd(sa, c.lo_a, c.hi_a, seed++), b = rnd(sb, c.lo_b, c.hi_b, seed++);
      gradcheck([&](const std::vector<Tensor>& in) { return c.f(in[0], in[1]); }, {a, b}, {}, 1e-6,
                1e-6, std::string(c.name) + " " + a.shape().str() + " with " + b.shape().str());
    }
}

TEST(ElementwiseGrad, ScalarOperands) {
  Tensor x = rnd({2, 3}, 0.5, 2, 300);
  const std::vector<std::pair<const char*, Unary>> cases = {
      {"x + 2.5", [](const Tensor& t) { return add(t, 2.5); }},
      {"x - 2", [](const Tensor& t) { return sub(t, 2.0); }},
      {"x * 2", [](const Tensor& t) { return mul(t, 2.0); }},
      {"x / 3", [](const Tensor& t) { return div(t, 3.0); }},
      {"x ^ 3", [](const Tensor& t) { return pow(t, 3.0); }},
      {"x ^ 0.5", [](const Tensor& t) { return pow(t, 0.5); }},
      {"x ^ -1.5", [](const Tensor& t) { return pow(t, -1.5); }},
  };
  for (const auto& [name, f] : cases) {
    const auto& fn = f;  // clang 14 cannot capture a structured binding in a lambda
    gradcheck([&](const std::vector<Tensor>& in) { return fn(in[0]); }, {x}, {}, 1e-6, 1e-6, name);
  }
  // By hand: d(sum(2x))/dx = 2 and d(sum(x^3))/dx = 3x^2.
  Tensor g = grad_of([](const Tensor& t) { return mul(t, 2.0); }, x, ones({2, 3}, f64));
  expect_close(g, std::vector<double>(6, 2.0), "d(2x)");
  std::vector<double> xs = x.to_vector<double>(), want;
  for (double v : xs) want.push_back(3 * v * v);
  expect_close(grad_of([](const Tensor& t) { return pow(t, 3.0); }, x, ones({2, 3}, f64)), want,
               "d(x^3)");
}

TEST(ElementwiseGrad, WhereRoutesTheGradientAndNotTheCondition) {
  Tensor cond = make_tensor({1, 0, 1}, Shape{3, 1}, DType::kBool);
  Tensor x = rnd({4}, -2, 2, 400), y = rnd({3, 4}, -2, 2, 401);
  gradcheck([&](const std::vector<Tensor>& in) { return where(cond, in[0], in[1]); }, {x, y},
            {0, 1}, 1e-6, 1e-6, "where");
  // By hand: x takes the gradient of rows 0 and 2, y that of row 1.
  auto vg =
      value_and_grad([&](const std::vector<Tensor>& in) { return sum(where(cond, in[0], in[1])); },
                     GradPosition{0, 1})({x, y});
  expect_close(vg.input_grads[0], std::vector<double>(4, 2.0), "where dx");
  expect_close(vg.input_grads[1], {0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0}, "where dy");
  // A floating condition is used as a mask only: it gets no gradient, not even a zero one.
  Tensor fcond = make_tensor({1, 0, 1}, Shape{3, 1}, f64);
  auto vc =
      value_and_grad([&](const std::vector<Tensor>& in) { return sum(where(in[0], in[1], in[2])); },
                     GradPosition{0})({fcond, x, y});
  expect_close(vc.input_grads[0], {0, 0, 0}, "where dcond");
}

// NOTE [Elementwise gradients]: PyTorch's conventions where there is no derivative.
TEST(ElementwiseGrad, KinksFollowPyTorchConventions) {
  auto g1 = [](const Unary& f, std::vector<double> xs) {
    Tensor x = Tensor::from_vector(xs, Shape{(int64_t)xs.size()});
    return grad_of(f, x, ones({(int64_t)xs.size()}, f64));
  };
  expect_close(g1([](const Tensor& t) { return abs(t); }, {-1, 0, 2}), {-1, 0, 1}, "abs");
  expect_close(g1([](const Tensor& t) { return relu(t); }, {-1, 0, 2}), {0, 0, 1}, "relu");
  expect_close(g1([](const Tensor& t) { return relu6(t); }, {-1, 0, 3, 6, 7}), {0, 0, 1, 0, 0},
               "relu6");

  // Ties split half and half; the rest goes to the larger (maximum) or smaller (minimum).
  Tensor a = Tensor::from_vector<double>({1, 2, 3}, Shape{3});
  Tensor b = Tensor::from_vector<double>({2, 2, 1}, Shape{3});
  for (bool is_max : {true, false}) {
    auto vg = value_and_grad(
        [&](const std::vector<Tensor>& in) {
          return sum(is_max ? maximum(in[0], in[1]) : minimum(in[0], in[1]));
        },
        GradPosition{0, 1})({a, b});
    expect_close(vg.input_grads[0],
                 is_max ? std::vector<double>{0, 0.5, 1} : std::vector<double>{1, 0.5, 0},
                 is_max ? "maximum da" : "minimum da");
    expect_close(vg.input_grads[1],
                 is_max ? std::vector<double>{1, 0.5, 0} : std::vector<double>{0, 0.5, 1},
                 is_max ? "maximum db" : "minimum db");
  }

  // pow: d/da is 0 where b == 0 (even at a == 0); d/db is 0 where a == 0 and b >= 0, and NaN
  // where a < 0 (no real log).
  Tensor base = Tensor::from_vector<double>({0, 0, 2, 0, -2}, Shape{5});
  Tensor expo = Tensor::from_vector<double>({0, 2, 0, 0.5, 2}, Shape{5});
  auto vp = value_and_grad([&](const std::vector<Tensor>& in) { return sum(pow(in[0], in[1])); },
                           GradPosition{0, 1})({base, expo});
  // d/da = b * a^(b-1): {0 (b == 0), 2*0 = 0, 0 (b == 0), 0.5 * 0^-0.5 = inf, 2 * -2 = -4}
  expect_close(vp.input_grads[0], {0, 0, 0, INFINITY, -4}, "pow da");
  // d/db = a^b * log(a): {0, 0, 1 * log 2, 0, NaN}
  expect_close(vp.input_grads[1], {0, 0, std::log(2.0), 0, NAN}, "pow db");
}

TEST(ElementwiseGrad, CastSendsTheGradientBackInTheInputDtype) {
  // float32 -> float16 -> float32: the gradient reaches x as float32. Weights that are exact in
  // float16 make the expected values exact.
  Tensor x = rnd({2, 3}, -2, 2, 500, DType::kFloat32);
  Tensor w = make_tensor({1, -2, 0.5, 4, 0.25, -1}, Shape{2, 3}, DType::kFloat32);
  auto vg = value_and_grad([&](const std::vector<Tensor>& in) {
    return sum(mul(cast(cast(in[0], DType::kFloat16), DType::kFloat32), w));
  })({x});
  EXPECT_EQ(vg.input_grads[0].dtype(), DType::kFloat32);
  expect_close(vg.input_grads[0], {1, -2, 0.5, 4, 0.25, -1}, "cast round trip");
  // A float64 loss of a float32 input: the gradient is cast back to float32.
  Tensor x2 = rnd({3}, -2, 2, 501, DType::kFloat32);
  auto v2 = value_and_grad([&](const std::vector<Tensor>& in) {
    Tensor d = cast(in[0], f64);
    return sum(mul(d, d));
  })({x2});
  EXPECT_EQ(v2.input_grads[0].dtype(), DType::kFloat32);
  std::vector<double> want;
  for (double v : x2.to_vector<double>()) want.push_back(2 * v);
  expect_close(v2.input_grads[0], want, "cast to float64");
  // Mixed operands: a float16 operand of a float32 product gets a float16 gradient.
  Tensor h = rnd({3}, -2, 2, 502, DType::kFloat16);
  Tensor f = rnd({3}, -2, 2, 503, DType::kFloat32);
  auto v3 = value_and_grad([&](const std::vector<Tensor>& in) { return sum(mul(in[0], in[1])); },
                           GradPosition{0, 1})({h, f});
  EXPECT_EQ(v3.input_grads[0].dtype(), DType::kFloat16);
  EXPECT_EQ(v3.input_grads[1].dtype(), DType::kFloat32);
  expect_close(v3.input_grads[0], f.to_vector<double>(), tolerance(DType::kFloat16), "mixed da");
  expect_close(v3.input_grads[1], h.to_vector<double>(), "mixed db");
}

// Each rule in float32, float16 and bfloat16 against the float64 gradient of the same values:
// the tape runs the rule in the input's dtype (or float32 for the composite activations).
TEST(ElementwiseGrad, RulesWorkInLowPrecision) {
  uint32_t seed = 600;
  for (DType t : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    const Tol tol = t == DType::kFloat32   ? Tol{1e-5, 1e-5}
                    : t == DType::kFloat16 ? Tol{1e-2, 1e-2}
                                           : Tol{6e-2, 6e-2};
    for (const UnaryCase& c : unary_cases()) {
      Tensor x = rnd_away({16}, c.lo, c.hi, seed++, c.kinks, t);
      Tensor w = rnd({16}, -1, 1, seed++, t);
      Tensor g = grad_of(c.f, x, w);
      EXPECT_EQ(g.dtype(), t) << c.name;
      Tensor ref = grad_of(c.f, x.to(f64), w.to(f64));
      expect_close(g, ref.to_vector<double>(), tol, std::string(c.name) + " in " + dtype_name(t));
    }
    for (const BinaryCase& c : binary_cases()) {
      Tensor a = rnd({3, 4}, c.lo_a, c.hi_a, seed++, t), b = rnd({4}, c.lo_b, c.hi_b, seed++, t);
      auto run = [&](const Tensor& x, const Tensor& y) {
        return value_and_grad([&](const std::vector<Tensor>& in) { return sum(c.f(in[0], in[1])); },
                              GradPosition{0, 1})({x, y});
      };
      auto got = run(a, b), ref = run(a.to(f64), b.to(f64));
      for (int k = 0; k < 2; ++k) {
        EXPECT_EQ(got.input_grads[k].dtype(), t) << c.name;
        // The broadcast operand's gradient is a sum of 3 rounded terms.
        expect_close(got.input_grads[k], ref.input_grads[k].to_vector<double>(),
                     Tol{tol.atol * 3, tol.rtol * 3},
                     std::string(c.name) + " d" + (k ? "b" : "a") + " in " + dtype_name(t));
      }
    }
  }
}

// Rules are written with ops, so an enclosing tape differentiates them: second derivatives.
TEST(ElementwiseGrad, GradientsOfGradients) {
  const std::vector<std::pair<const char*, Unary>> cases = {
      {"tanh", [](const Tensor& t) { return tanh(t); }},
      {"sigmoid", [](const Tensor& t) { return sigmoid(t); }},
      {"exp", [](const Tensor& t) { return exp(t); }},
      {"sin", [](const Tensor& t) { return sin(t); }},
      {"x^3", [](const Tensor& t) { return pow(t, 3.0); }},
      {"1/x", [](const Tensor& t) { return div(ones_like(t), t); }},
      {"gelu", [](const Tensor& t) { return gelu(t); }},
      {"silu", [](const Tensor& t) { return silu(t); }},
  };
  uint32_t seed = 700;
  for (const auto& [name, f] : cases) {
    const auto& fn = f;  // clang 14 cannot capture a structured binding in a lambda
    Tensor x = rnd({5}, 0.5, 2, seed++);
    auto first = [&](const std::vector<Tensor>& in) {
      return value_and_grad([&](const std::vector<Tensor>& xs) { return sum(fn(xs[0])); })({in[0]})
          .input_grads[0];
    };
    gradcheck(first, {x}, {}, 1e-6, 1e-5, std::string("d2 ") + name);
  }
  // By hand: d2(x^3)/dx2 = 6x.
  Tensor x = rnd({4}, -2, 2, 799);
  auto second = value_and_grad([&](const std::vector<Tensor>& in) {
    return sum(value_and_grad([](const std::vector<Tensor>& xs) {
                 return sum(mul(mul(xs[0], xs[0]), xs[0]));
               })({in[0]})
                   .input_grads[0]);
  })({x});
  std::vector<double> want;
  for (double v : x.to_vector<double>()) want.push_back(6 * v);
  expect_close(second.input_grads[0], want, "d2(x^3)");
}

}  // namespace
}  // namespace spore::test
