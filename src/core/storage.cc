// Storage over memory it does not own (NOTE [External storage] in include/spore/tensor.h).
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "spore/backend.h"
#include "spore/tensor.h"

namespace spore {

namespace {
// The "backend" an external storage gives its memory back to: nothing to free, the owner
// releases the memory when the storage's owner_ member goes. It is never registered and never
// allocates; only deallocate is ever called through Storage::backend_.
class ExternalRelease final : public Backend {
 public:
  const char* name() const override { return "external"; }
  int device_count() const override { return 0; }
  bool host_accessible() const override { return false; }
  void* allocate(size_t, int) override {
    throw Error(ErrorCode::kInternal, "external memory cannot allocate");
  }
  void deallocate(void*, size_t, int) override {}
  void copy_to_host(void*, const void*, size_t, int) override { unreachable(); }
  void copy_from_host(void*, const void*, size_t, int) override { unreachable(); }
  void copy_on_device(void*, const void*, size_t, int) override { unreachable(); }

 private:
  [[noreturn]] static void unreachable() {
    throw Error(ErrorCode::kInternal, "external memory copies go through the device's backend");
  }
};
ExternalRelease& external_release() {
  static ExternalRelease* r = new ExternalRelease();  // leaked: freed storages outlive statics
  return *r;
}
}  // namespace

Storage::Storage(void* data, size_t bytes, Device device, std::shared_ptr<const void> owner,
                 bool writable)
    : data_(data), bytes_(bytes), device_(device), writable_(writable), owner_(std::move(owner)) {
  backend(device.backend);  // throws kDevice naming the id when no such backend is registered
  if (!data_ && bytes_ > 0)
    throw Error(ErrorCode::kValue, "external storage of " + std::to_string(bytes) +
                                       " bytes at a null address: pass the memory's address");
  if (!owner_)  // an empty keep-alive would make this storage look allocated; give it a token
    owner_ = std::make_shared<const int>(0);
  backend_ = &external_release();
}

// NOTE [Derived forms] (include/spore/tensor.h).
struct Storage::DerivedForms {
  std::mutex mu;
  std::vector<std::pair<std::string, std::shared_ptr<const void>>> forms;
};

std::shared_ptr<const void> Storage::derived(const std::string& key,
                                             const std::function<std::shared_ptr<const void>()>& make) const {
  if (writable_) return make();
  DerivedForms* d = derived_.load(std::memory_order_acquire);
  if (!d) {
    auto* fresh = new DerivedForms();
    if (derived_.compare_exchange_strong(d, fresh, std::memory_order_acq_rel)) d = fresh;
    else delete fresh;  // another thread's won; d holds it
  }
  std::lock_guard<std::mutex> lock(d->mu);
  for (const auto& [k, form] : d->forms)
    if (k == key) return form;
  std::shared_ptr<const void> form = make();
  if ((int)d->forms.size() < kMaxDerivedForms) d->forms.emplace_back(key, form);
  return form;
}

void Storage::destroy_derived() { delete derived_.exchange(nullptr); }

void Storage::throw_read_only(const char* writer) {
  throw Error(ErrorCode::kValue,
              std::string(writer) +
                  " would write into read-only memory (a tensor over a read-only mapping of a "
                  "file, NOTE [External storage], or a weight a graph made for itself, NOTE "
                  "[Derived forms]); write into a copy instead (tensor.clone())");
}

Tensor Tensor::from_external(void* data, const Shape& shape, DType dtype,
                             std::shared_ptr<const void> owner, bool writable, Device device) {
  const size_t bytes = (size_t)shape.numel() * dtype_size(dtype);
  auto* storage = new Storage(data, bytes, device, std::move(owner), writable);
  Tensor t;
  try {
    t = view_of(storage, 0, shape, contiguous_strides(shape), dtype);
  } catch (...) {
    storage->release();
    throw;
  }
  storage->release();  // the view holds the only reference now
  return t;
}

}  // namespace spore
