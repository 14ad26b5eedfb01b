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
    for (OpId op : {OpId::k_cast, OpId::k_copy})
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

}  // namespace
}  // namespace spore
