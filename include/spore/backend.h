// The backend interface (NOTE [Backends]). A backend owns memory on its devices and a set of
// kernels, which it registers into the op registry for (op, dtype) pairs. What a backend has no
// kernel for is a fact the dispatcher reports (precision modes act on it), never a crash.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "spore/device.h"

namespace spore {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  // Number of devices present; 0 means the backend is compiled in but has nothing to run on.
  virtual int device_count() const = 0;
  // True when the CPU may read and write this backend's memory directly.
  virtual bool host_accessible() const = 0;
  virtual void* allocate(size_t bytes, int device_index) = 0;
  virtual void deallocate(void* ptr, size_t bytes, int device_index) = 0;
  virtual void copy_to_host(void* dst, const void* src, size_t bytes, int device_index) = 0;
  virtual void copy_from_host(void* dst, const void* src, size_t bytes, int device_index) = 0;
  virtual void copy_on_device(void* dst, const void* src, size_t bytes, int device_index) = 0;
  virtual void synchronize(int /*device_index*/) {}
};

// NOTE [Backend registration]
// The core never names a backend. Each backend's own translation unit holds a static
// BackendRegistrar that adds two hooks to a list the core owns: `install` registers the Backend
// object (register_backend_at / register_backend), `kernels` registers its kernels into the op
// registry. The core runs every `install` before the first look-up of a backend, and the op
// registry runs every `kernels` right after it builds its table (run_backend_kernel_hooks). A
// registrar constructed after either moment runs that hook at once, so a backend in a plugin
// library loaded later still registers.
// Static libraries drop an object that nothing references, registrar or not: the build keeps the
// CPU backend's object with a linker anchor (-Wl,--undefined=spore_cpu_backend_anchor on
// spore_core, see src/CMakeLists.txt); a backend in its own static library needs the same.
class BackendRegistrar {
 public:
  using Hook = void (*)();
  BackendRegistrar(Hook install, Hook kernels);
};
// Called once by the op registry after it has built its table: runs every backend's `kernels`.
void run_backend_kernel_hooks();

// Registers a backend and returns its id.
int register_backend(std::unique_ptr<Backend> backend);
// Registers a backend at a fixed id (CUDA uses kCudaBackend).
void register_backend_at(int id, std::unique_ptr<Backend> backend);
// The backend with this id; throws kDevice when none is registered there.
Backend& backend(int id);
bool backend_registered(int id);
// Id of the backend called `name`, or -1.
int find_backend(std::string_view name);
std::vector<std::string> backend_names();

}  // namespace spore
