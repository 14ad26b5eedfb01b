#include "spore/tensor.h"

#include <cstring>
#include <new>

#include "allocator.h"
#include "spore/backend.h"
#include "spore/context.h"
#include "spore/host_read_guard.h"
#include "tensor_ops_hooks.h"

namespace spore {

// ---- Storage --------------------------------------------------------------------------------
Storage::Storage(size_t bytes, Device device)
    : bytes_(bytes), backend_(&backend(device.backend)), device_(device) {
  data_ = backend_->allocate(bytes, device.index);
}

Storage::~Storage() {
  destroy_derived();
  backend_->deallocate(data_, bytes_, device_.index);
}

void* Storage::operator new(size_t size) { return host_alloc(size); }
void Storage::operator delete(void* p, size_t size) { host_free(p, size); }
void* TensorImpl::operator new(size_t size) { return host_alloc(size); }
void TensorImpl::operator delete(void* p, size_t size) { host_free(p, size); }

// ---- hooks into the op layer (NOTE [Core hooks]) ----------------------------------------------
namespace {
constinit TensorOpHooks g_hooks{};

[[noreturn]] void no_op_layer(const char* what) {
  throw Error(ErrorCode::kInternal, std::string("Tensor::") + what +
                                        " needs the op layer, which is not linked or not yet "
                                        "initialised; link spore_core's ops (any op call does)");
}
const TensorOpHooks& hooks_for(const char* what, bool ok) {
  if (!ok) no_op_layer(what);
  return g_hooks;
}
}  // namespace

void set_tensor_op_hooks(const TensorOpHooks& hooks) { g_hooks = hooks; }
const TensorOpHooks& tensor_op_hooks() { return g_hooks; }

// ---- Tensor ---------------------------------------------------------------------------------
namespace {
bool compute_contiguous(const Shape& shape, const Shape& strides) {
  int64_t expected = 1;
  for (int i = shape.ndim() - 1; i >= 0; --i) {
    if (shape[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}
}  // namespace

void Tensor::throw_undefined() {
  throw Error(ErrorCode::kValue, "use of an undefined tensor (default-constructed or moved-from)");
}

void Tensor::destroy(TensorImpl* impl) { delete impl; }

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  auto* impl = new TensorImpl;
  Tensor t(impl);  // owns impl from here on, so a failed allocation below leaks nothing
  impl->storage = new Storage((size_t)shape.numel() * dtype_size(dtype), device);
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return t;
}

Tensor Tensor::empty(const Shape& shape, DType dtype) { return empty(shape, dtype, context().device); }

Tensor Tensor::view_of(Storage* storage, int64_t offset, const Shape& shape, const Shape& strides,
                       DType dtype) {
  if (shape.ndim() != strides.ndim())
    throw Error(ErrorCode::kInternal, "view_of: shape and strides differ in rank");
  // The furthest element must lie inside the storage.
  int64_t lo = offset, hi = offset;
  bool empty_view = shape.numel() == 0;
  for (int i = 0; i < shape.ndim() && !empty_view; ++i) {
    int64_t span = (shape[i] - 1) * strides[i];
    (span < 0 ? lo : hi) += span;
  }
  int64_t capacity = (int64_t)(storage->bytes() / dtype_size(dtype));
  if (!empty_view && (lo < 0 || hi >= capacity))
    throw Error(ErrorCode::kIndex, "view " + shape.str() + " with strides " + strides.str() +
                                       " at offset " + std::to_string(offset) +
                                       " does not fit its storage of " + std::to_string(capacity) +
                                       " elements");
  auto* impl = new TensorImpl;
  storage->retain();
  impl->storage = storage;
  impl->offset = offset;
  impl->shape = shape;
  impl->strides = strides;
  impl->dtype = dtype;
  impl->contiguous = compute_contiguous(shape, strides);
  return Tensor(impl);
}

Tensor Tensor::from_host(const void* data, DType src, const Shape& shape, DType dst, Device device) {
  Tensor host = empty(shape, src, Device::cpu());
  if (host.nbytes()) std::memcpy(host.data_ptr(), data, host.nbytes());
  Tensor t = src == dst ? host : hooks_for("from_host", g_hooks.cast).cast(host, dst);
  return device == Device::cpu() ? t : t.to(device);
}

Tensor Tensor::from_bytes(const void* data, const Shape& shape, DType dtype, Device device) {
  return from_host(data, dtype, shape, dtype, device);
}

int64_t Tensor::size(int64_t axis) const {
  return shape()[normalize_axis(axis, ndim(), "size")];
}

void* Tensor::data_ptr() const {
  const TensorImpl& i = checked();
  return static_cast<char*>(i.storage->data()) + i.offset * (int64_t)dtype_size(i.dtype);
}

// NOTE [Core hooks]: the host-read guard graph tracing installs (include/spore/host_read_guard.h).
namespace {
thread_local HostReadGuard* t_host_read_guard = nullptr;
}
HostReadGuard* host_read_guard() { return t_host_read_guard; }
HostReadGuard* set_host_read_guard(HostReadGuard* guard) { return std::exchange(t_host_read_guard, guard); }

void Tensor::to_host(void* dst, DType dst_dtype) const {
  if (t_host_read_guard) t_host_read_guard->on_host_read("a copy of its values to the host");
  Tensor t = *this;
  if (t.device() != Device::cpu()) t = t.to(Device::cpu());
  // One float32 element read as float64 (a training loop's loss.item<double>() every step) is
  // widened here: the cast op would plan, allocate a tensor and run a kernel for one exact
  // conversion, a tenth of a compiled step of the chapter's regression (bench/README.md).
  if (t.numel() == 1 && t.dtype() == DType::kFloat32 && dst_dtype == DType::kFloat64) {
    const double v = *static_cast<const float*>(t.data_ptr());
    std::memcpy(dst, &v, sizeof v);
    return;
  }
  if (t.dtype() != dst_dtype) t = hooks_for("to_host", g_hooks.cast).cast(t, dst_dtype);
  t = t.contiguous();
  if (t.nbytes()) std::memcpy(dst, t.data_ptr(), t.nbytes());
}

std::vector<uint8_t> Tensor::to_bytes() const {
  std::vector<uint8_t> out(nbytes());
  to_host(out.data(), dtype());
  return out;
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return hooks_for("contiguous", g_hooks.copy).copy(*this);
}

Tensor Tensor::clone() const { return hooks_for("clone", g_hooks.copy).copy(*this); }

Tensor Tensor::to(DType dtype) const { return hooks_for("to", g_hooks.cast).cast(*this, dtype); }

Tensor Tensor::to(Device device) const {
  if (device == this->device()) return *this;
  Tensor src = contiguous();
  Tensor out = empty(shape(), dtype(), device);
  Backend& from = backend(src.device().backend);
  Backend& to = backend(device.backend);
  size_t n = src.nbytes();
  if (n == 0) return out;
  if (src.device().backend == kCpuBackend) {
    to.copy_from_host(out.data_ptr(), src.data_ptr(), n, device.index);
  } else if (device.backend == kCpuBackend) {
    from.copy_to_host(out.data_ptr(), src.data_ptr(), n, src.device().index);
  } else {  // between two non-CPU backends: through the host
    Tensor host = src.to(Device::cpu());
    to.copy_from_host(out.data_ptr(), host.data_ptr(), n, device.index);
  }
  return out;
}

// Goes through dispatch (the `assign` op, which declares that it writes its first input), so
// observers see every in-place write (NOTE [Declared effects]).
void Tensor::copy_(const Tensor& src) const { hooks_for("copy_", g_hooks.assign).assign(*this, src); }

}  // namespace spore
