// Resuming AdamW (NOTE [LoRA training]): an optimizer given another's moments (exp_avg,
// exp_avg_sq) and step count continues exactly as that one does, copies what it is given (the
// update writes its moments in place), and refuses moments of the wrong count or shape.
#include <gtest/gtest.h>

#include "spore/error.h"
#include "spore/ops.h"
#include "spore/optim.h"

namespace spore::test {
namespace {

TEST(AdamMoments, ARestoredOptimizerContinuesAsTheOriginal) {
  auto sched = optim::linear_warmup(1, optim::cosine_lr(0.1, 4));
  Parameter a(Tensor::from_vector(std::vector<float>{1, -2, 3}, Shape{3}), "w");
  optim::AdamW first({a}, sched, 0.9, 0.999, 1e-8, 0.01);
  auto grad = [](int s) { return Tensor::from_vector(std::vector<float>{0.5f * s, -1.0f, 0.25f + s}, Shape{3}); };
  first.step({grad(1)});
  first.step({grad(2)});
  const Tensor after_two = a.value().clone();
  Parameter b(a.value().clone(), "w");
  optim::AdamW second({b}, sched, 0.9, 0.999, 1e-8, 0.01);
  second.load_moments(first.exp_avg(), first.exp_avg_sq());
  second.set_steps_taken(first.steps_taken());
  const std::vector<float> m_before = first.exp_avg()[0].to_vector<float>();
  for (int s = 3; s <= 5; ++s) {
    first.step({grad(s)});
    second.step({grad(s)});
  }
  EXPECT_EQ(a.value().to_vector<float>(), b.value().to_vector<float>());
  EXPECT_NE(first.exp_avg()[0].to_vector<float>(), m_before);  // moved in place, the copy did not follow
  EXPECT_EQ(second.exp_avg()[0].to_vector<float>(), first.exp_avg()[0].to_vector<float>());

  // Without the moments (the step count only) the run differs: the restore is what is seen.
  Parameter d(after_two.clone(), "w");
  optim::AdamW fresh({d}, sched, 0.9, 0.999, 1e-8, 0.01);
  fresh.set_steps_taken(2);
  for (int s = 3; s <= 5; ++s) fresh.step({grad(s)});
  EXPECT_NE(d.value().to_vector<float>(), a.value().to_vector<float>());
}

TEST(AdamMoments, WrongCountOrShapeIsRefused) {
  Parameter a(zeros({2, 3}), "layer.w");
  optim::Adam opt({a}, 0.1);
  EXPECT_THROW(opt.load_moments({}, {}), Error);
  try {
    opt.load_moments({zeros({3, 2})}, {zeros({2, 3})});
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kShape);
    EXPECT_NE(std::string(e.what()).find("layer.w"), std::string::npos) << e.what();
  }
  EXPECT_THROW(opt.set_steps_taken(-1), Error);
}

}  // namespace
}  // namespace spore::test
