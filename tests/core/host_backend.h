// A test backend whose memory is host memory (so CPU kernels can be borrowed for it), under a
// name of the test's choosing: precision_mode_test's "lowp", backend_registration_test's plugin.
#pragma once
#include <cstring>
#include <string>

#include "core/allocator.h"
#include "spore/backend.h"

namespace spore::test {

class HostBackend final : public Backend {
 public:
  explicit HostBackend(std::string name) : name_(std::move(name)) {}
  const char* name() const override { return name_.c_str(); }
  int device_count() const override { return 1; }
  bool host_accessible() const override { return true; }
  void* allocate(size_t bytes, int) override { return host_alloc(bytes); }
  void deallocate(void* p, size_t bytes, int) override { host_free(p, bytes); }
  void copy_to_host(void* d, const void* s, size_t n, int) override { std::memcpy(d, s, n); }
  void copy_from_host(void* d, const void* s, size_t n, int) override { std::memcpy(d, s, n); }
  void copy_on_device(void* d, const void* s, size_t n, int) override { std::memcpy(d, s, n); }

 private:
  std::string name_;
};

}  // namespace spore::test
