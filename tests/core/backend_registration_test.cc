// NOTE [Backend registration]: backends join through the core's hook list, the CPU included.
#include <gtest/gtest.h>

#include <cstring>

#include "core/allocator.h"
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

class HostBackend final : public Backend {
 public:
  const char* name() const override { return "late_host"; }
  int device_count() const override { return 1; }
  bool host_accessible() const override { return true; }
  void* allocate(size_t bytes, int) override { return host_alloc(bytes); }
  void deallocate(void* p, size_t bytes, int) override { host_free(p, bytes); }
  void copy_to_host(void* d, const void* s, size_t n, int) override { std::memcpy(d, s, n); }
  void copy_from_host(void* d, const void* s, size_t n, int) override { std::memcpy(d, s, n); }
  void copy_on_device(void* d, const void* s, size_t n, int) override { std::memcpy(d, s, n); }
};

int g_late_id = -1;

TEST(BackendRegistration, LateRegistrarRunsItsHooksAtOnce) {
  // The registry and the backend table are built by now (the test above used them): a plugin
  // registering later must still be installed and get its kernels without another call.
  (void)op_def(OpId::k_add);
  ASSERT_EQ(find_backend("late_host"), -1);
  BackendRegistrar late(
      [] { g_late_id = register_backend(std::make_unique<HostBackend>()); },
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
