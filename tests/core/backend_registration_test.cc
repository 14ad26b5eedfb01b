// NOTE [Backend registration]: backends join through the core's hook list, the CPU included.
#include <gtest/gtest.h>

#include "core/host_backend.h"
#include "spore/backend.h"
#include "spore/op_registry.h"
#include "spore/ops.h"

namespace spore {
namespace {

TEST(BackendRegistration, CpuRegisteredItselfWithKernels) {
  // Nothing in the core names the CPU: it is there because its registrar ran.
  ASSERT_TRUE(backend_registered(kCpuBackend));
  EXPECT_STREQ(backend(kCpuBackend).name(), "cpu");
  EXPECT_NE(op_def(OpId::k_add).kernel(kCpuBackend, DType::kFloat32), nullptr);
  EXPECT_NE(op_def(OpId::k_matmul).kernel(kCpuBackend, DType::kFloat32), nullptr);
}

int g_late_id = -1;

TEST(BackendRegistration, LateRegistrarRunsItsHooksAtOnce) {
  // The registry and the backend table are built by now (the test above used them): a plugin
  // registering later must still be installed and get its kernels without another call.
  (void)op_def(OpId::k_add);
  ASSERT_EQ(find_backend("late_host"), -1);
  BackendRegistrar late(
      [] { g_late_id = register_backend(std::make_unique<test::HostBackend>("late_host")); },
      [] {
        for (OpId op : {OpId::k_add, OpId::k_copy, OpId::k_cast})
          register_kernel(op, g_late_id, DType::kFloat32, op_def(op).kernel(kCpuBackend, DType::kFloat32));
      });
  ASSERT_GE(g_late_id, 0);
  EXPECT_EQ(find_backend("late_host"), g_late_id);
  Device d{(uint8_t)g_late_id, 0};
  Tensor a = Tensor::from_vector<float>({1, 2, 3}, Shape{3}, d);
  EXPECT_EQ(add(a, a).to_vector<float>(), (std::vector<float>{2, 4, 6}));
}

}  // namespace
}  // namespace spore
