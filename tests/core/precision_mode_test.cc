// NOTE [Precision modes] proven with a backend that lacks kernels: "lowp" keeps its memory on the
// host and borrows the CPU's float16/bfloat16 kernels for add and matmul, and nothing else but
// cast and copy. Under keep_type a float32 add there must fail at dispatch with an error that
// names the op, the dtype, the device and what it supports; under allow_mixed it must run in
// float16 and hand back float32.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "core/host_backend.h"
#include "spore/backend.h"
#include "spore/context.h"
#include "spore/dispatch_plan.h"
#include "spore/op_registry.h"
#include "spore/ops.h"
#include "test_util.h"

namespace spore {
namespace {

Device lowp() {
  static int id = [] {
    int b = register_backend(std::make_unique<test::HostBackend>("lowp"));
    for (OpId op : {OpId::k_add, OpId::k_matmul})
      for (DType t : {DType::kFloat16, DType::kBFloat16})
        register_kernel(op, b, t, op_def(op).kernel(kCpuBackend, t));
    for (OpId op : {OpId::k_cast, OpId::k_copy, OpId::k_assign})
      for (DType t : kAllDTypes) register_kernel(op, b, t, op_def(op).kernel(kCpuBackend, t));
    return b;
  }();
  return Device{(uint8_t)id, 0};
}

TEST(PrecisionMode, DeviceParsesByName) {
  Device d = lowp();
  EXPECT_EQ(Device::parse("lowp"), d);
  EXPECT_EQ(d.str(), "lowp:0");
  try {
    Device::parse("lowp:3");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDevice);
  }
}

TEST(PrecisionMode, KeepTypeRefusesMissingDtypeAtDispatch) {
  ContextGuard guard;
  set_precision_mode(PrecisionMode::kKeepType);
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, Shape{2, 2}, lowp());
  try {
    add(a, a);
    FAIL() << "expected a dtype error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDType);
    std::string m = e.what();
    for (const char* part : {"add", "float32", "lowp", "float16, bfloat16", "allow_mixed"})
      EXPECT_NE(m.find(part), std::string::npos) << "message lacks '" << part << "': " << m;
  }
}

TEST(PrecisionMode, KeepTypeRunsSupportedDtype) {
  ContextGuard guard;
  set_precision_mode(PrecisionMode::kKeepType);
  Tensor a = cast(Tensor::from_vector<float>({1, 2, 3, 4}, Shape{2, 2}), DType::kFloat16).to(lowp());
  Tensor c = matmul(a, a);
  EXPECT_EQ(c.dtype(), DType::kFloat16);
  EXPECT_EQ(c.device(), lowp());
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{7, 10, 15, 22}));
}

TEST(PrecisionMode, AllowMixedCastsAndReturnsRequestedDtype) {
  ContextGuard guard;
  set_precision_mode(PrecisionMode::kAllowMixed);
  // 1/3 is not exact in float16: the result must carry float16 rounding, in a float32 tensor.
  std::vector<float> x = {1.0f / 3, 2, 1000.25f, -0.1f};
  Tensor a = Tensor::from_vector<float>(x, Shape{4}, lowp());
  Tensor c = add(a, a);
  EXPECT_EQ(c.dtype(), DType::kFloat32);
  EXPECT_EQ(c.device(), lowp());
  std::vector<float> got = c.to_vector<float>();
  for (size_t i = 0; i < x.size(); ++i) {
    float h = (float)Half(x[i]);
    EXPECT_EQ(got[i], (float)Half(h + h)) << i;
  }
}

TEST(PrecisionMode, AllowMixedStillFailsWhenNothingCanStandIn) {
  ContextGuard guard;
  set_precision_mode(PrecisionMode::kAllowMixed);
  Tensor a = Tensor::from_vector<float>({1, 2}, Shape{2}, lowp());
  try {
    exp(a);  // lowp has no exp kernel in any dtype
    FAIL() << "expected a dtype error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDType);
    EXPECT_NE(std::string(e.what()).find("exp"), std::string::npos);
  }
}

TEST(PrecisionMode, MixedDevicesAreRefused) {
  Tensor a = Tensor::from_vector<float>({1, 2}, Shape{2});
  Tensor b = Tensor::from_vector<float>({1, 2}, Shape{2}, lowp());
  try {
    add(a, b);
    FAIL() << "expected a device error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDevice);
  }
}

// NOTE [Context scopes]: two threads with different precision modes at the same time, each
// seeing only its own: keep_type must refuse the float32 add on lowp, allow_mixed must run it.
TEST(PrecisionMode, ScopedModesOfTwoThreadsDoNotMix) {
  Device d = lowp();
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, Shape{4}, d);
  constexpr int kRounds = 200;
  std::atomic<int> ready{0};
  std::atomic<int> keep_refused{0}, mixed_ran{0}, wrong{0};
  auto worker = [&](PrecisionMode mode) {
    ContextScope scope(mode);
    ready.fetch_add(1);
    while (ready.load() < 2) {
    }  // both scopes are open before either thread dispatches
    for (int i = 0; i < kRounds; ++i) {
      if (context().precision != mode) wrong.fetch_add(1);
      try {
        Tensor c = add(a, a);
        if (mode == PrecisionMode::kAllowMixed && c.dtype() == DType::kFloat32) mixed_ran.fetch_add(1);
        else wrong.fetch_add(1);
      } catch (const Error& e) {
        if (mode == PrecisionMode::kKeepType && e.code() == ErrorCode::kDType) keep_refused.fetch_add(1);
        else wrong.fetch_add(1);
      }
    }
  };
  std::thread keep(worker, PrecisionMode::kKeepType);
  std::thread mixed(worker, PrecisionMode::kAllowMixed);
  keep.join();
  mixed.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(keep_refused.load(), kRounds);
  EXPECT_EQ(mixed_ran.load(), kRounds);
  EXPECT_EQ(context().precision, default_context().precision);  // this thread: untouched
}

TEST(PrecisionMode, ModeNamesParse) {
  EXPECT_EQ(precision_mode_from_name("allow_mix_precision"), PrecisionMode::kAllowMixed);
  EXPECT_EQ(precision_mode_from_name("keep_type"), PrecisionMode::kKeepType);
  EXPECT_THROW(precision_mode_from_name("fast"), Error);
}

// ---- plans and kernel selection on lowp --------------------------------------------------------

TEST(PrecisionMode, ThePlanNamesTheStandInDtypeAndTheCasts) {
  ContextGuard guard;
  set_precision_mode(PrecisionMode::kAllowMixed);
  Tensor a = Tensor::from_vector<float>({1, 2}, Shape{2}, lowp());
  PlannedOp op(OpId::k_add, std::vector<Tensor>{a, a});
  const DispatchPlan& p = op.plan();
  EXPECT_TRUE(p.fallback);
  EXPECT_EQ(p.inference.compute, DType::kFloat32);
  EXPECT_EQ(p.compute, DType::kFloat16);
  EXPECT_EQ(p.compute, fallback_dtype(op_def(OpId::k_add), lowp().backend, DType::kFloat32));
  EXPECT_TRUE(p.casts_input(0) && p.casts_input(1));
  EXPECT_EQ(p.kernel_output_dtype(0), DType::kFloat16);     // made in float16...
  EXPECT_EQ(p.inference.outputs[0].dtype, DType::kFloat32);  // ...and handed back in float32
  for (float v : {1.0f, 3.0f}) {
    Tensor b = Tensor::from_vector<float>({v, v}, Shape{2}, lowp());
    TensorList out = op.run({b, a});
    EXPECT_EQ(out[0].dtype(), DType::kFloat32);
    EXPECT_EQ(out[0].to(Device::cpu()).to_vector<float>(), (std::vector<float>{v + 1, v + 2}));
  }
}

// NOTE [Kernel selection]: a test-only mixed-dtype kernel: float16 x float32 -> float32, same
// shapes, contiguous. lowp has no mul kernel in its table at all.
void mul_f16_f32(const KernelCall& c) {
  const auto* a = static_cast<const Half*>(c.inputs[0].data_ptr());
  const auto* b = static_cast<const float*>(c.inputs[1].data_ptr());
  auto* out = static_cast<float*>(c.outputs[0].data_ptr());
  for (int64_t i = 0; i < c.outputs[0].numel(); ++i) out[i] = (float)a[i] * b[i];
}
KernelFn select_mixed_mul(const KernelQuery& q) {
  const Tensor &a = q.inputs[0], &b = q.inputs[1];
  bool fits = a.dtype() == DType::kFloat16 && b.dtype() == DType::kFloat32 && a.shape() == b.shape() &&
              a.is_contiguous() && b.is_contiguous() && q.inference.outputs[0].dtype == DType::kFloat32;
  return fits ? &mul_f16_f32 : nullptr;
}
Device lowp_with_selector() {
  static bool once = (register_kernel_selector(OpId::k_mul, lowp().backend, &select_mixed_mul), true);
  (void)once;
  return lowp();
}

TEST(PrecisionMode, ASelectorSeesEveryInputDtypeAndTakesMixedInputsAsTheyAre) {
  ContextGuard guard;
  set_precision_mode(PrecisionMode::kKeepType);  // no casts allowed: the selector's kernel runs as is
  Device d = lowp_with_selector();
  Tensor a = cast(Tensor::from_vector<float>({1, 2, 3}, Shape{3}), DType::kFloat16).to(d);
  Tensor b = Tensor::from_vector<float>({0.5f, 4, -1}, Shape{3}, d);
  PlannedOp op(OpId::k_mul, std::vector<Tensor>{a, b});
  EXPECT_TRUE(op.plan().selected);
  EXPECT_EQ(op.plan().cast_mask, 0u);
  Tensor c = mul(a, b);
  EXPECT_EQ(c.dtype(), DType::kFloat32);
  EXPECT_EQ(c.to(Device::cpu()).to_vector<float>(), (std::vector<float>{0.5f, 8, -3}));
}

TEST(PrecisionMode, WhenTheSelectorDeclinesTheReportedFactsStayTheTables) {
  ContextGuard guard;
  set_precision_mode(PrecisionMode::kAllowMixed);
  Device d = lowp_with_selector();
  EXPECT_TRUE(op_def(OpId::k_mul).supported_dtypes(d.backend).empty());
  Tensor b = Tensor::from_vector<float>({1, 2}, Shape{2}, d);
  try {
    mul(b, b);  // float32 x float32: declined, and no table kernel can stand in
    FAIL() << "expected a dtype error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDType);
    for (const char* part : {"mul", "lowp", "none"})
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << part << " in " << e.what();
  }
}

}  // namespace
}  // namespace spore
