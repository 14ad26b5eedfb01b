// Optimizer steps against values computed by hand (in double, in the test), schedules, clipping
// and loss scaling.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "spore/ops.h"
#include "spore/optim.h"

namespace spore::optim {
namespace {

Parameter param(std::vector<float> v) { return Parameter(Tensor::from_vector(v), "w"); }
Tensor vec(std::vector<float> v) { return Tensor::from_vector(v); }

void expect_values(const Parameter& p, const std::vector<double>& want, double tol = 1e-6) {
  std::vector<double> got = p.value().to_vector<double>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << i;
}

TEST(SGD, PlainStepAndWeightDecay) {
  Parameter p = param({1, 2});
  SGD opt({p}, 0.1, 0, /*weight_decay=*/0.01);
  opt.step({vec({0.5f, -1})});
  expect_values(p, {1 - 0.1 * (0.5 + 0.01 * 1), 2 - 0.1 * (-1 + 0.01 * 2)});
  EXPECT_EQ(opt.steps_taken(), 1);
}

TEST(SGD, MomentumAndNesterovOverTwoSteps) {
  for (bool nesterov : {false, true}) {
    Parameter p = param({1.0f});
    SGD opt({p}, 0.1, 0.9, 0, nesterov);
    double w = 1, buf = 0;
    for (double g : {0.5, -0.25}) {
      opt.step({vec({(float)g})});
      buf = opt.steps_taken() == 1 ? g : 0.9 * buf + g;
      w -= 0.1 * (nesterov ? g + 0.9 * buf : buf);
    }
    expect_values(p, {w});
  }
}

TEST(Adam, TwoStepsMatchTheDefinition) {
  for (bool decoupled : {false, true}) {
    Parameter p = param({1.0f, -2.0f});
    std::unique_ptr<Optimizer> opt;
    if (decoupled) opt = std::make_unique<AdamW>(std::vector<Parameter>{p}, 0.01, 0.9, 0.999, 1e-8, 0.1);
    else opt = std::make_unique<Adam>(std::vector<Parameter>{p}, 0.01, 0.9, 0.999, 1e-8, 0.1);
    double w[2] = {1, -2}, m[2] = {0, 0}, v[2] = {0, 0};
    double grads[2][2] = {{0.3, -0.7}, {-0.1, 0.2}};
    for (int t = 1; t <= 2; ++t) {
      opt->step({vec({(float)grads[t - 1][0], (float)grads[t - 1][1]})});
      for (int i = 0; i < 2; ++i) {
        double g = grads[t - 1][i];
        if (decoupled) w[i] *= 1 - 0.01 * 0.1;
        else g += 0.1 * w[i];
        m[i] = 0.9 * m[i] + 0.1 * g;
        v[i] = 0.999 * v[i] + 0.001 * g * g;
        double mh = m[i] / (1 - std::pow(0.9, t)), vh = v[i] / (1 - std::pow(0.999, t));
        w[i] -= 0.01 * mh / (std::sqrt(vh) + 1e-8);
      }
    }
    expect_values(p, {w[0], w[1]}, 1e-5);
  }
}

TEST(Adam, Float64AndFloat16Parameters) {
  Parameter p64(Tensor::from_vector<double>({0.5}), "w64");
  Adam a64({p64}, 0.1);
  a64.step({Tensor::from_vector<double>({2.0})});
  EXPECT_NEAR(p64.value().item<double>(), 0.5 - 0.1 * 2.0 / (2.0 + 1e-8), 1e-14);

  Parameter p16(cast(Tensor::from_vector<float>({0.5}), DType::kFloat16), "w16");
  Adam a16({p16}, 0.125);
  a16.step({Tensor::from_vector<float>({2.0})});  // cast to the parameter's dtype
  EXPECT_EQ(p16.value().dtype(), DType::kFloat16);
  EXPECT_NEAR(p16.value().item<double>(), 0.375, 1e-3);
}

TEST(Optimizer, BadInputIsRefused) {
  Parameter p = param({1, 2});
  EXPECT_THROW(SGD({}, 0.1), Error);
  EXPECT_THROW(SGD({p, p}, 0.1), Error);
  EXPECT_THROW(Adam({p}, 0.1, 1.0), Error);
  SGD opt({p}, 0.1);
  EXPECT_THROW(opt.step({}), Error);
  try {
    opt.step({vec({1, 2, 3})});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kShape);
    EXPECT_NE(std::string(e.what()).find("'w'"), std::string::npos);
  }
  Parameter ints(Tensor::from_vector<int32_t>({1}), "i");
  EXPECT_THROW(SGD({ints}, 0.1), Error);
}

TEST(Schedules, Values) {
  EXPECT_DOUBLE_EQ(step_lr(1.0, 10, 0.5)->lr(9), 1.0);
  EXPECT_DOUBLE_EQ(step_lr(1.0, 10, 0.5)->lr(25), 0.25);
  auto cos = cosine_lr(1.0, 100, 0.1);
  EXPECT_DOUBLE_EQ(cos->lr(0), 1.0);
  EXPECT_NEAR(cos->lr(50), 0.55, 1e-12);
  EXPECT_DOUBLE_EQ(cos->lr(100), 0.1);
  auto warm = linear_warmup(4, constant_lr(0.8));
  EXPECT_DOUBLE_EQ(warm->lr(0), 0.2);
  EXPECT_DOUBLE_EQ(warm->lr(3), 0.8);
  EXPECT_DOUBLE_EQ(warm->lr(10), 0.8);
  EXPECT_THROW(constant_lr(-1), Error);
  // An optimizer follows its schedule.
  Parameter p = param({0});
  SGD opt({p}, step_lr(1.0, 1, 0.5));
  opt.step({vec({1})});
  opt.step({vec({1})});
  expect_values(p, {-1.5});
}

TEST(Clipping, ScalesToMaxNormAndReportsTheNorm) {
  std::vector<Tensor> g = {vec({3}), vec({4})};
  EXPECT_NEAR(clip_grad_norm(g, 1.0), 5.0, 1e-6);
  EXPECT_NEAR(g[0].item<float>(), 0.6, 1e-5);
  EXPECT_NEAR(g[1].item<float>(), 0.8, 1e-5);
  std::vector<Tensor> small = {vec({0.3f})};
  clip_grad_norm(small, 1.0);
  EXPECT_FLOAT_EQ(small[0].item<float>(), 0.3f);
}

TEST(LossScaler, SkipsNonFiniteStepsAndGrows) {
  DynamicLossScaler s(1024, 2, 0.5, 2);
  std::vector<Tensor> bad = {vec({1, std::numeric_limits<float>::infinity()})};
  EXPECT_FALSE(s.unscale(bad));
  EXPECT_EQ(s.scale(), 512);
  std::vector<Tensor> nan = {vec({std::numeric_limits<float>::quiet_NaN()})};
  EXPECT_FALSE(s.unscale(nan));
  EXPECT_EQ(s.skipped_steps(), 2);
  std::vector<Tensor> good = {vec({256, 512})};
  EXPECT_TRUE(s.unscale(good));
  EXPECT_EQ(good[0].to_vector<float>(), (std::vector<float>{1, 2}));
  std::vector<Tensor> good2 = {vec({256})};
  EXPECT_TRUE(s.unscale(good2));
  EXPECT_EQ(s.scale(), 512);  // grew after two good steps in a row
}

}  // namespace
}  // namespace spore::optim
