// NOTE [Dispatch observers]: observers stack and compose; NoGradGuard hides ops from the
// gradient recorders already open, never from a plain observer (a tracer).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "spore/autograd.h"
#include "spore/op_registry.h"
#include "spore/ops.h"

namespace spore {
namespace {

// Writes the names of the ops it sees into a shared log, tagged with its own name, so that the
// order of notification across observers is visible.
struct Logger final : DispatchObserver {
  Logger(std::string tag, std::vector<std::string>* log, bool gradients = false)
      : DispatchObserver(gradients), tag(std::move(tag)), log(log) {}
  void on_op(const OpDef& d, std::span<const Tensor>, const Attrs&, std::span<const Tensor>) override {
    log->push_back(tag + ":" + d.name);
  }
  std::string tag;
  std::vector<std::string>* log;
};

TEST(ObserverStack, TwoObserversBothSeeEveryOpOutermostFirst) {
  std::vector<std::string> log;
  Logger outer("outer", &log), inner("inner", &log);
  Tensor a = Tensor::from_vector<float>({1, 2}, Shape{2});
  const int before = num_dispatch_observers();
  {
    DispatchObserverGuard g1(&outer);
    DispatchObserverGuard g2(&inner);
    EXPECT_EQ(num_dispatch_observers(), before + 2);
    Tensor b = neg(a);
  }
  EXPECT_EQ(num_dispatch_observers(), before);
  EXPECT_EQ(log, (std::vector<std::string>{"outer:neg", "inner:neg"}));
  Tensor c = neg(a);  // popped: nobody logs
  EXPECT_EQ(log.size(), 2u);
}

TEST(ObserverStack, NoGradHidesOpsFromGradientRecordersOnly) {
  std::vector<std::string> log;
  Logger tracer("tracer", &log), recorder("tape", &log, /*gradients=*/true);
  Tensor a = Tensor::from_vector<float>({1, 2}, Shape{2});
  DispatchObserverGuard g1(&tracer);
  DispatchObserverGuard g2(&recorder);
  {
    NoGradGuard no_grad;
    Tensor b = exp(a);
  }
  Tensor c = sin(a);
  EXPECT_EQ(log, (std::vector<std::string>{"tracer:exp", "tracer:sin", "tape:sin"}));
}

TEST(ObserverStack, NoGradNestsAndARecorderOpenedInsideStillRecords) {
  std::vector<std::string> log;
  Logger outer_tape("outer", &log, true);
  Tensor a = Tensor::from_vector<float>({1, 2}, Shape{2});
  DispatchObserverGuard g1(&outer_tape);
  {
    NoGradGuard first;
    {
      NoGradGuard second;
      Logger inner_tape("inner", &log, true);
      DispatchObserverGuard g2(&inner_tape);
      Tensor b = exp(a);  // the inner recorder was pushed under the guard: it records
    }
    Tensor c = cos(a);  // still paused for the outer one
  }
  Tensor d = sin(a);
  EXPECT_EQ(log, (std::vector<std::string>{"inner:exp", "outer:sin"}));
}

TEST(ObserverStack, TracerSeesAnUpdateUnderNoGradInsideValueAndGrad) {
  // A tracer around a training step sees the forward ops, the backward ops, and the optimizer's
  // in-place update run under no-grad; the tape does not record the update.
  std::vector<std::string> log;
  Logger tracer("tracer", &log);
  DispatchObserverGuard guard(&tracer);
  Tensor x = Tensor::from_vector<float>({1, 2, 3}, Shape{3});
  auto f = [](const std::vector<Tensor>& in) { return sum(mul(in[0], in[0])); };
  ValueAndGrad vg = value_and_grad(f)({x});
  Tensor p = x.clone(), buf = zeros_like(x);
  {
    NoGradGuard no_grad;
    dispatch(OpId::k_sgd_update, std::vector<Tensor>{p, vg.input_grads[0], buf},
             Attrs::of(0.5, 0.0, 0.0, 0.0, false, true));
  }
  auto seen = [&](const std::string& name) {
    return std::find(log.begin(), log.end(), "tracer:" + name) != log.end();
  };
  EXPECT_TRUE(seen("mul"));
  EXPECT_TRUE(seen("sum"));
  EXPECT_TRUE(seen("sgd_update"));
  EXPECT_EQ(log.back(), "tracer:sgd_update");
  // p = x - 0.5 * 2x = 0
  for (float v : p.to_vector<float>()) EXPECT_EQ(v, 0.0f);
}

TEST(ObserverStack, TooManyObserversIsAnErrorNotACrash) {
  std::vector<std::string> log;
  std::vector<std::unique_ptr<Logger>> many;
  const int room = kMaxDispatchObservers - num_dispatch_observers();
  for (int i = 0; i < room; ++i) {
    many.push_back(std::make_unique<Logger>("x", &log));
    push_dispatch_observer(many.back().get());
  }
  Logger extra("extra", &log);
  try {
    push_dispatch_observer(&extra);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kValue);
  }
  for (auto it = many.rbegin(); it != many.rend(); ++it) pop_dispatch_observer(it->get());
  pop_dispatch_observer(&extra);  // never pushed: nothing happens
  EXPECT_EQ(num_dispatch_observers(), kMaxDispatchObservers - room);
}

TEST(ObserverStack, CopyIntoATensorIsADispatchedWrite) {
  // Tensor::copy_ runs the `assign` op, which declares that it writes its first input.
  std::vector<std::string> log;
  Logger tracer("tracer", &log);
  Tensor dst = zeros({2, 3});
  Tensor src = Tensor::from_vector<double>({1, 2, 3}, Shape{3});
  {
    DispatchObserverGuard guard(&tracer);
    dst.copy_(src);  // cast to float32 and broadcast to [2, 3] first
  }
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log.back(), "tracer:assign");
  EXPECT_EQ(dst.to_vector<float>(), (std::vector<float>{1, 2, 3, 1, 2, 3}));
  EXPECT_TRUE(op_def(OpId::k_assign).writes(0));
  EXPECT_FALSE(op_def(OpId::k_assign).writes(1));
  // Into a strided view: only the viewed elements change.
  Tensor base = zeros({2, 2});
  Tensor col = slice(base, 1, 1, 2, 1);
  col.copy_(Tensor::from_vector<float>({5, 6}, Shape{2, 1}));
  EXPECT_EQ(base.to_vector<float>(), (std::vector<float>{0, 5, 0, 6}));
}

}  // namespace
}  // namespace spore
