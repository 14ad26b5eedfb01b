// NOTE [Dispatch plans]: a call planned once runs many times with new inputs of the planned
// signature, gives what eager dispatch gives, and refuses inputs of another signature.
#include <gtest/gtest.h>

#include "spore/dispatch_plan.h"
#include "spore/ops.h"

namespace spore {
namespace {

TEST(DispatchPlan, PlanOnceRunTwiceWithNewInputs) {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  Tensor b = Tensor::from_vector<float>({10, 20, 30}, Shape{3});
  PlannedOp op(OpId::k_add, std::vector<Tensor>{a, b});
  EXPECT_FALSE(op.plan().is_view());
  EXPECT_FALSE(op.plan().fallback);
  EXPECT_EQ(op.plan().cast_mask, 0u);
  ASSERT_EQ(op.plan().num_outputs(), 1);
  EXPECT_EQ(op.plan().inference.outputs[0].shape, (Shape{2, 3}));

  TensorList first = op.run({a, b});
  EXPECT_EQ(first[0].to_vector<float>(), (std::vector<float>{11, 22, 33, 14, 25, 36}));
  Tensor c = Tensor::from_vector<float>({-1, -2, -3, -4, -5, -6}, Shape{2, 3});
  Tensor d = Tensor::from_vector<float>({1, 1, 1}, Shape{3});
  TensorList second = op.run({c, d});
  EXPECT_EQ(second[0].to_vector<float>(), (std::vector<float>{0, -1, -2, -3, -4, -5}));
  EXPECT_NE(first[0].impl(), second[0].impl());  // each run allocates its own outputs
  EXPECT_EQ(max_abs_diff(second[0], add(c, d)), 0.0);
}

TEST(DispatchPlan, PlanRecordsThePromotionCasts) {
  Tensor i = Tensor::from_vector<int32_t>({1, 2}, Shape{2});
  Tensor f = Tensor::from_vector<float>({0.5f, 0.25f}, Shape{2});
  PlannedOp op(OpId::k_mul, std::vector<Tensor>{i, f});
  EXPECT_EQ(op.plan().compute, DType::kFloat32);
  EXPECT_TRUE(op.plan().casts_input(0));
  EXPECT_FALSE(op.plan().casts_input(1));
  for (int k = 0; k < 2; ++k) {
    Tensor i2 = Tensor::from_vector<int32_t>({3 + k, 4}, Shape{2});
    TensorList out = op.run({i2, f});
    EXPECT_EQ(out[0].dtype(), DType::kFloat32);
    EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{(3 + k) * 0.5f, 1.0f}));
  }
}

TEST(DispatchPlan, ViewPlansBuildViewsOfEachRunsInput) {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  PlannedOp op(OpId::k_permute, std::vector<Tensor>{a}, Attrs::of(std::vector<int64_t>{1, 0}));
  EXPECT_TRUE(op.plan().is_view());
  Tensor b = Tensor::from_vector<float>({6, 5, 4, 3, 2, 1}, Shape{2, 3});
  TensorList out = op.run({b});
  EXPECT_EQ(out[0].storage(), b.storage());
  EXPECT_EQ(out[0].contiguous().to_vector<float>(), (std::vector<float>{6, 3, 5, 2, 4, 1}));
}

TEST(DispatchPlan, RunRefusesAnotherSignature) {
  Tensor a = Tensor::from_vector<float>({1, 2}, Shape{2});
  PlannedOp op(OpId::k_exp, std::vector<Tensor>{a});
  for (const Tensor& bad : {Tensor::from_vector<float>({1, 2, 3}, Shape{3}),
                            Tensor::from_vector<double>({1, 2}, Shape{2}), Tensor()}) {
    try {
      op.run({bad});
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kValue);
      EXPECT_NE(std::string(e.what()).find("exp"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(op.run({a, a}), Error);
}

TEST(DispatchPlan, PlanningRaisesWhatDispatchRaises) {
  Tensor a = Tensor::from_vector<float>({1, 2}, Shape{2});
  Tensor b = Tensor::from_vector<float>({1, 2, 3}, Shape{3});
  DispatchPlan plan;
  try {
    plan_dispatch(OpId::k_add, std::vector<Tensor>{a, b}, {}, plan);
    FAIL() << "expected a shape error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kShape);
  }
  EXPECT_THROW(plan_dispatch((OpId)9999, std::vector<Tensor>{a}, {}, plan), Error);
}

TEST(DispatchPlan, FallbackDtypeIsAPublicFact) {
  // The stand-in for float32 is the first lossless widening the backend has: float64 on the CPU.
  const OpDef& add_def = op_def(OpId::k_add);
  EXPECT_EQ(fallback_dtype(add_def, kCpuBackend, DType::kFloat32), DType::kFloat64);
}

}  // namespace
}  // namespace spore
