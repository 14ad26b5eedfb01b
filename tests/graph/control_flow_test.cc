// cond and while_loop eagerly and under jit (NOTE [Control flow]).
#include "spore/control_flow.h"

#include <gtest/gtest.h>

#include "spore/autograd.h"
#include "spore/jit.h"
#include "spore/ops.h"
#include "test_util.h"

namespace spore {
namespace {
using spore::test::expect_error;

// f(x) = sum(x) > 0 ? sum(x * x) : sum(-3 x)
Tensor f(const Tensor& x) {
  Tensor pred = gt(sum(x), zeros({}));
  return cond(
      pred, [](const std::vector<Tensor>& in) { return std::vector<Tensor>{sum(mul(in[0], in[0]))}; },
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{sum(mul(in[0], -3.0))}; }, {x})[0];
}

TEST(ControlFlow, CondTakesTheBranchOfThePredicateEagerlyAndCompiled) {
  Tensor pos = Tensor::from_vector<float>({1, 2, -0.5f}), neg_x = Tensor::from_vector<float>({-1, 0.5f, -2});
  EXPECT_FLOAT_EQ(f(pos).item<float>(), 1 + 4 + 0.25f);
  EXPECT_FLOAT_EQ(f(neg_x).item<float>(), 7.5f);
  JitFunction g = jit(TensorFn([](const std::vector<Tensor>& in) { return f(in[0]); }));
  EXPECT_FLOAT_EQ(g.call1({pos}).item<float>(), 5.25f);  // traced on the then branch...
  EXPECT_FLOAT_EQ(g.call1({neg_x}).item<float>(), 7.5f);  // ...and the graph still takes the else branch
  EXPECT_FLOAT_EQ(g.call1({pos}).item<float>(), 5.25f);
  EXPECT_EQ(g.stats().misses, 1);
}

TEST(ControlFlow, CondIsDifferentiableThroughTheTakenBranch) {
  auto loss = [](const std::vector<Tensor>& in) { return f(in[0]); };
  Tensor pos = Tensor::from_vector<float>({1, 2, -0.5f}), neg_x = Tensor::from_vector<float>({-1, 0.5f, -2});
  // d/dx sum(x^2) = 2x; d/dx sum(-3x) = -3.
  EXPECT_EQ(value_and_grad(loss)({pos}).input_grads[0].to_vector<float>(), (std::vector<float>{2, 4, -1}));
  EXPECT_EQ(value_and_grad(loss)({neg_x}).input_grads[0].to_vector<float>(), (std::vector<float>{-3, -3, -3}));
  JitFunction g = jit(TensorsFn([&](const std::vector<Tensor>& in) { return value_and_grad(loss)(in).input_grads; }));
  EXPECT_EQ(g({pos})[0].to_vector<float>(), (std::vector<float>{2, 4, -1}));
  EXPECT_EQ(g({neg_x})[0].to_vector<float>(), (std::vector<float>{-3, -3, -3}));
  EXPECT_EQ(g({pos})[0].to_vector<float>(), (std::vector<float>{2, 4, -1}));
}

TEST(ControlFlow, CondRejectsBadPredicatesAndMismatchedBranches) {
  BranchFn id = [](const std::vector<Tensor>& in) { return in; };
  BranchFn two = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0], in[0]}; };
  Tensor x = ones({2});
  expect_error([&] { cond(ones({}), id, id, {x}); }, ErrorCode::kDType, "cond", "bool");
  expect_error([&] { cond(gt(x, zeros({2})), id, id, {x}); }, ErrorCode::kShape, "cond", "one element");
  JitFunction g = jit(TensorsFn([&](const std::vector<Tensor>& in) { return cond(gt(sum(in[0]), zeros({})), id, two, in); }));
  expect_error([&] { g({x}); }, ErrorCode::kValue, "cond", "then branch returns 1");
}

TEST(ControlFlow, WhileLoopRunsEagerlyAndCompiled) {
  // Doubles x until its sum reaches 100: 1 -> 128 in 7 steps (more in tests/graph/while_loop_test.cc).
  BranchFn below = [](const std::vector<Tensor>& s) { return std::vector<Tensor>{lt(sum(s[0]), full({}, 100.0))}; };
  BranchFn twice = [](const std::vector<Tensor>& s) { return std::vector<Tensor>{mul(s[0], 2.0)}; };
  EXPECT_EQ(while_loop(below, twice, {ones({1})})[0].to_vector<float>(), (std::vector<float>{128}));
  JitFunction g = jit(TensorsFn([&](const std::vector<Tensor>& in) { return while_loop(below, twice, in); }));
  EXPECT_EQ(g({ones({1})})[0].to_vector<float>(), (std::vector<float>{128}));
  EXPECT_EQ(g({full({1}, 30.0)})[0].to_vector<float>(), (std::vector<float>{120}));
  EXPECT_EQ(g.stats().misses, 1);
}

}  // namespace
}  // namespace spore
