// Tensor: a typed, shaped view of reference-counted storage on a device.
//
// NOTE [Views]
// A tensor is (storage, offset, shape, strides, dtype). reshape of a contiguous tensor, transpose,
// permute, slice, squeeze/unsqueeze, expand and split return views that share storage with their
// input; writing through one is seen through the other. contiguous() copies only when needed.
// Ops always produce new contiguous outputs unless they are view ops.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "spore/device.h"
#include "spore/dtype.h"
#include "spore/error.h"
#include "spore/shape.h"

namespace spore {

class Backend;

// NOTE [Tensor allocation]
// An eager op on small tensors must cost well under a microsecond, so creating a tensor takes no
// trip through malloc: TensorImpl and Storage objects come from the host allocator's per-thread
// free lists (NOTE [Host allocator]), like the data of CPU tensors, and a Storage keeps its
// Backend so that freeing it looks nothing up.

// NOTE [External storage]
// A Storage either allocates its memory on the device (and gives it back to the device's backend)
// or wraps memory it does not own: model weights used in place from a memory-mapped file (ggml's
// buffer_from_host_ptr), a buffer another library filled. An external storage holds `owner`, a
// keep-alive (the mapping, the other library's buffer object) released with the last tensor that
// views it, and says whether it may be written: a mapping opened read-only is not writable, and
// an op that writes its inputs (the optimizers' update ops, copy_) refuses it with a kValue error
// instead of a segfault. Its memory is returned through a no-op release in place of the backend
// (src/core/storage.cc), so the destructor stays one indirect call for both kinds.

// Memory on a device, shared by every tensor that views it.
class Storage {
 public:
  Storage(size_t bytes, Device device);  // allocates on the device
  // Wraps `bytes` at `data` on `device` without copying (NOTE [External storage]); `owner` keeps
  // the memory alive until this storage is freed. Throws kDevice for an unknown device.
  Storage(void* data, size_t bytes, Device device, std::shared_ptr<const void> owner, bool writable);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }
  bool writable() const { return writable_; }
  bool external() const { return owner_ != nullptr; }
  // Throws kValue naming `writer` when this storage may not be written (NOTE [External storage]).
  void require_writable(const char* writer) const {
    if (!writable_) throw_read_only(writer);
  }

  // NOTE [Derived forms]
  // A read-only storage's bytes never change, so a kernel may keep a form it derived from them
  // (oneDNN's blocked layout of a convolution weight) for as long as the storage lives, instead
  // of deriving it on every call. make_read_only() declares that of memory nobody else can write
  // (a tensor a graph pass has just made for itself); from then on ops that write their inputs
  // refuse it, as they refuse a read-only mapping.
  void make_read_only() { writable_ = false; }
  // The form kept under `key` (exactly equal keys only), made by `make` the first time and freed
  // with this storage. A writable storage keeps nothing, and past kMaxDerivedForms forms nothing
  // more is kept: `make` runs on each call then. Thread-safe; `make` runs under a lock.
  static constexpr int kMaxDerivedForms = 16;
  std::shared_ptr<const void> derived(const std::string& key,
                                      const std::function<std::shared_ptr<const void>()>& make) const;

  void retain() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void release() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  int use_count() const { return refs_.load(std::memory_order_relaxed); }

  static void* operator new(size_t size);  // NOTE [Tensor allocation]
  static void operator delete(void* p, size_t size);

 private:
  std::atomic<int> refs_{1};
  void* data_ = nullptr;
  size_t bytes_ = 0;
  Backend* backend_ = nullptr;  // where the memory goes back to (a no-op for external memory)
  Device device_;
  bool writable_ = true;
  std::shared_ptr<const void> owner_;  // external memory only: keeps it alive
  struct DerivedForms;
  mutable std::atomic<DerivedForms*> derived_{nullptr};  // made on the first derived() call
  void destroy_derived();

  [[noreturn]] static void throw_read_only(const char* writer);
};

struct TensorImpl {
  std::atomic<int> refs{1};
  Storage* storage = nullptr;  // owned reference
  int64_t offset = 0;          // in elements
  Shape shape;
  Shape strides;  // in elements
  DType dtype = DType::kFloat32;
  bool contiguous = true;  // cached: recomputed whenever shape or strides change

  ~TensorImpl() {
    if (storage) storage->release();
  }
  static void* operator new(size_t size);  // NOTE [Tensor allocation]
  static void operator delete(void* p, size_t size);
};

class Tensor {
 public:
  Tensor() = default;
  Tensor(const Tensor& o) : impl_(o.impl_) {
    if (impl_) impl_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  Tensor(Tensor&& o) noexcept : impl_(std::exchange(o.impl_, nullptr)) {}
  Tensor& operator=(const Tensor& o) {
    Tensor tmp(o);
    std::swap(impl_, tmp.impl_);
    return *this;
  }
  Tensor& operator=(Tensor&& o) noexcept {
    std::swap(impl_, o.impl_);
    return *this;
  }
  ~Tensor() { reset(); }

  // A new contiguous tensor with uninitialised contents.
  static Tensor empty(const Shape& shape, DType dtype, Device device);
  static Tensor empty(const Shape& shape, DType dtype);  // on the context's default device
  // A view of `storage` (NOTE [Views]); checks that the view fits in the storage.
  static Tensor view_of(Storage* storage, int64_t offset, const Shape& shape, const Shape& strides,
                        DType dtype);
  // Copies host values into a new tensor; values.size() must equal shape.numel().
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape);
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape, Device device);
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values) {
    return from_vector(values, Shape{(int64_t)values.size()});
  }
  // A 0-d tensor holding one value.
  template <typename T>
  static Tensor scalar(T value, Device device = Device::cpu()) {
    return from_vector(std::vector<T>{value}, Shape{}, device);
  }
  // A contiguous tensor over memory it does not own, without a copy (NOTE [External storage]).
  static Tensor from_external(void* data, const Shape& shape, DType dtype,
                              std::shared_ptr<const void> owner, bool writable,
                              Device device = Device::cpu());
  // Copies `bytes` of host memory (already in `dtype`'s layout) into a new tensor.
  static Tensor from_bytes(const void* data, const Shape& shape, DType dtype, Device device);

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return checked().shape; }
  const Shape& strides() const { return checked().strides; }
  int64_t offset() const { return checked().offset; }
  DType dtype() const { return checked().dtype; }
  Device device() const { return checked().storage->device(); }
  int ndim() const { return checked().shape.ndim(); }
  int64_t numel() const { return checked().shape.numel(); }
  int64_t size(int64_t axis) const;  // negative axes count from the end
  size_t itemsize() const { return dtype_size(dtype()); }
  size_t nbytes() const { return (size_t)numel() * itemsize(); }
  bool is_contiguous() const { return checked().contiguous; }
  Storage* storage() const { return checked().storage; }
  // Address of the first element; for host-accessible devices only when dereferenced.
  void* data_ptr() const;
  template <typename T>
  T* data() const;  // checks T against the dtype

  // Copy-out to the host: the one proof that a result exists. With a T other than the dtype,
  // the values are converted as cast() would.
  template <typename T>
  std::vector<T> to_vector() const;
  template <typename T>
  T item() const;  // the single element of a one-element tensor
  // Raw bytes in dtype layout, row-major (what checkpoints and IR files store).
  std::vector<uint8_t> to_bytes() const;

  Tensor contiguous() const;  // itself when already contiguous
  Tensor to(Device device) const;
  Tensor to(DType dtype) const;  // same as cast()
  Tensor clone() const;          // always a fresh contiguous copy
  // Copies src into this tensor's memory (shapes must broadcast to this shape).
  void copy_(const Tensor& src) const;

  std::string str() const;  // shape, dtype, device and values (abbreviated when large)
  bool same_storage(const Tensor& o) const { return storage() == o.storage(); }
  TensorImpl* impl() const { return impl_; }

 private:
  const TensorImpl& checked() const {
    if (!impl_) throw_undefined();
    return *impl_;
  }
  [[noreturn]] static void throw_undefined();
  void reset() {
    if (impl_ && impl_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) destroy(impl_);
    impl_ = nullptr;
  }
  static void destroy(TensorImpl* impl);
  explicit Tensor(TensorImpl* impl) : impl_(impl) {}
  static Tensor from_host(const void* data, DType src, const Shape& shape, DType dst, Device device);
  void to_host(void* dst, DType dst_dtype) const;

  TensorImpl* impl_ = nullptr;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

template <typename T>
Tensor Tensor::from_vector(const std::vector<T>& values, const Shape& shape) {
  return from_vector(values, shape, Device::cpu());
}

template <typename T>
Tensor Tensor::from_vector(const std::vector<T>& values, const Shape& shape, Device device) {
  static_assert(!std::is_same_v<T, bool>, "use from_vector<uint8_t> bytes with DType::kBool");
  if ((int64_t)values.size() != shape.numel())
    throw Error(ErrorCode::kShape, "from_vector: " + std::to_string(values.size()) +
                                       " values do not fill shape " + shape.str() + " (" +
                                       std::to_string(shape.numel()) + " elements)");
  return from_host(values.data(), dtype_v<T>, shape, dtype_v<T>, device);
}

template <typename T>
T* Tensor::data() const {
  if (dtype_v<T> != dtype())
    throw Error(ErrorCode::kDType, std::string("data<") + dtype_name(dtype_v<T>) +
                                       ">() on a tensor of dtype " + dtype_name(dtype()));
  return static_cast<T*>(data_ptr());
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  static_assert(!std::is_same_v<T, bool>, "read bool tensors with to_vector<uint8_t>()");
  std::vector<T> out((size_t)numel());
  to_host(out.data(), dtype_v<T>);
  return out;
}

template <typename T>
T Tensor::item() const {
  if (numel() != 1)
    throw Error(ErrorCode::kShape, "item(): the tensor has " + std::to_string(numel()) +
                                       " elements, shape " + shape().str() + "; item needs exactly 1");
  return to_vector<T>()[0];
}

}  // namespace spore
