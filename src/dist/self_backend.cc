// A group of one process (InitOptions::allow_single_process without a launcher): every collective
// over one rank is a copy, finished at once. It keeps single-process runs of a data-parallel
// script on the same code path, with no MPI start-up.
#include <cstring>

#include "dist/backends.h"

namespace spore::dist::detail {

namespace {

class Done final : public CommRequest {
 public:
  bool test() override { return true; }
};

void copy(const void* send, void* recv, int64_t count, DType dtype) {
  if (send != recv) std::memcpy(recv, send, (size_t)count * dtype_size(dtype));
}

class SelfBackend final : public CommBackend {
 public:
  const char* name() const override { return "self"; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::unique_ptr<CommRequest> all_reduce(const void* send, void* recv, int64_t count, DType dtype,
                                          ReduceOp, bool, bool) override {
    copy(send, recv, count, dtype);
    return std::make_unique<Done>();
  }
  std::unique_ptr<CommRequest> broadcast(void*, int64_t, DType, int) override {
    return std::make_unique<Done>();
  }
  std::unique_ptr<CommRequest> all_gather(const void* send, void* recv, int64_t count,
                                          DType dtype) override {
    copy(send, recv, count, dtype);
    return std::make_unique<Done>();
  }
  std::unique_ptr<CommRequest> reduce_scatter(const void* send, void* recv, int64_t count,
                                              DType dtype, ReduceOp) override {
    copy(send, recv, count, dtype);
    return std::make_unique<Done>();
  }
  std::unique_ptr<CommRequest> barrier() override { return std::make_unique<Done>(); }
  void abort(int exit_code) noexcept override { std::_Exit(exit_code); }
  void finalize() noexcept override {}
};

}  // namespace

std::unique_ptr<CommBackend> make_self_backend() {
  return std::make_unique<SelfBackend>();
}

}  // namespace spore::dist::detail
