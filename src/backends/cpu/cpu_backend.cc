// The CPU backend: host memory through the caching allocator (NOTE [Host allocator]) and the
// kernels of every family. It is always present and is the reference other backends are tested
// against.
#include "../../core/allocator.h"
#include "cpu_kernels.h"
#include "spore/backend.h"

#include <cstring>

namespace spore {

namespace {
class CpuBackend final : public Backend {
 public:
  const char* name() const override { return "cpu"; }
  int device_count() const override { return 1; }
  bool host_accessible() const override { return true; }
  void* allocate(size_t bytes, int) override { return host_alloc(bytes); }
  void deallocate(void* p, size_t bytes, int) override { host_free(p, bytes); }
  void copy_to_host(void* dst, const void* src, size_t n, int) override { std::memcpy(dst, src, n); }
  void copy_from_host(void* dst, const void* src, size_t n, int) override { std::memcpy(dst, src, n); }
  void copy_on_device(void* dst, const void* src, size_t n, int) override { std::memcpy(dst, src, n); }
};
}  // namespace

}  // namespace spore

namespace spore::cpu {
namespace {
void install_cpu_backend() { register_backend_at(kCpuBackend, std::make_unique<CpuBackend>()); }

void register_cpu_kernels() {
  register_elementwise_kernels();
  register_reduce_kernels();
  register_matmul_kernels();
  register_shape_kernels();
  register_index_kernels();
  register_scatter_kernels();
  register_norm_kernels();
  register_creation_kernels();
  register_conv_kernels();
  register_fused_conv_kernels();
  register_optim_kernels();
  register_fused_kernels();
  register_llm_kernels();
  register_int8_kernels();
  register_llm_grad_kernels();
  register_collective_kernels();
}

// NOTE [Backend registration]: the CPU backend adds itself to the core's list.
const BackendRegistrar g_cpu_registrar(&install_cpu_backend, &register_cpu_kernels);
}  // namespace

}  // namespace spore::cpu

// The linker anchor: spore_core's consumers link with --undefined=spore_cpu_backend_anchor, which
// keeps this object (and through it every CPU kernel) in the link although nothing calls it.
extern "C" void spore_cpu_backend_anchor() {}
