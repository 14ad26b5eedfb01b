// The tape's bookkeeping: rules are asked only for the gradients the tape needs, and gradients
// accumulate over repeated uses of a tensor.
#include <gtest/gtest.h>

#include "spore/autograd.h"
#include "spore/op_registry.h"
#include "spore/ops.h"

namespace spore {
namespace {

// Counts dispatched ops of one kind; installed around value_and_grad, it sees the forward pass
// (the tape sits above it on the observer stack) and the backward pass (dispatched after the
// tape detaches).
class OpCounter final : public DispatchObserver {
 public:
  explicit OpCounter(OpId id) : id_(id) { push_dispatch_observer(this); }
  ~OpCounter() override { pop_dispatch_observer(this); }
  void on_op(const OpDef& def, std::span<const Tensor>, const Attrs&, std::span<const Tensor>) override {
    count += def.id == id_;
  }
  int count = 0;

 private:
  OpId id_;
};

TEST(Tape, RulesSkipGradientsOfUntrackedInputs) {
  Tensor x = random_normal({8, 4}, 1), w = random_normal({4, 3}, 2);
  Parameter pw(w, "w");
  auto f = [&](const std::vector<Tensor>& in) { return sum(matmul(in[0], pw.value())); };
  {
    OpCounter matmuls(OpId::k_matmul);
    ValueAndGrad vg = value_and_grad(f, GradPosition::none(), {pw})({x});
    EXPECT_EQ(matmuls.count, 2);  // the forward one and dL/dw; dL/dx is never asked for
    // dL/dw[k][j] = sum_i x[i][k]
    Tensor want = sum(x, {0}, true);
    EXPECT_LT(max_abs_diff(vg.weight_grads[0], expand(reshape(want, {4, 1}), {4, 3})), 1e-5);
  }
  {
    OpCounter matmuls(OpId::k_matmul);
    ValueAndGrad vg = value_and_grad(f, GradPosition(0), {pw})({x});
    EXPECT_EQ(matmuls.count, 3);  // both gradients
    ASSERT_EQ(vg.input_grads.size(), 1u);
    EXPECT_LT(max_abs_diff(vg.input_grads[0], expand(reshape(sum(w, {1}), {1, 4}), {8, 4})), 1e-5);
  }
}

TEST(Tape, GradientsAccumulateOverRepeatedUses) {
  Tensor x = Tensor::from_vector<double>({1.5, -2.0, 0.5}, Shape{3});
  // f = sum(x*x + x*x*x): df/dx = 2x + 3x^2, x used five times
  auto f = [](const std::vector<Tensor>& in) {
    const Tensor& v = in[0];
    return sum(add(mul(v, v), mul(mul(v, v), v)));
  };
  ValueAndGrad vg = value_and_grad(f)({x});
  std::vector<double> g = vg.input_grads[0].to_vector<double>();
  const double xs[] = {1.5, -2.0, 0.5};
  for (int i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(g[i], 2 * xs[i] + 3 * xs[i] * xs[i]);
}

}  // namespace
}  // namespace spore
