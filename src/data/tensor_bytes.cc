#include "data/tensor_bytes.h"

#include <cstring>

namespace spore::data::detail {

Tensor to_host(const Tensor& t) {
  return t.device() == Device::cpu() ? t : t.to(Device::cpu());
}

void copy_elements(const Tensor& t, void* dst) {
  const size_t item = t.itemsize();
  if (t.numel() == 0) return;
  if (t.is_contiguous()) {
    std::memcpy(dst, t.data_ptr(), t.nbytes());
    return;
  }
  // Walk the outer indices like an odometer; the innermost axis is a strided run.
  const int nd = t.ndim();
  const Shape& shape = t.shape();
  const Shape& strides = t.strides();
  const auto* base = static_cast<const unsigned char*>(t.data_ptr());
  auto* out = static_cast<unsigned char*>(dst);
  const int64_t inner = shape[nd - 1];
  const int64_t inner_stride = strides[nd - 1] * (int64_t)item;
  int64_t index[kMaxDims] = {};
  const int64_t outer = t.numel() / inner;
  for (int64_t o = 0; o < outer; ++o) {
    int64_t off = 0;
    for (int d = 0; d < nd - 1; ++d) off += index[d] * strides[d];
    const unsigned char* src = base + off * (int64_t)item;
    for (int64_t i = 0; i < inner; ++i, out += item) std::memcpy(out, src + i * inner_stride, item);
    for (int d = nd - 2; d >= 0; --d) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

Tensor row_view(const Tensor& t, int64_t i) {
  Shape shape, strides;
  for (int d = 1; d < t.ndim(); ++d) {
    shape.push_back(t.shape()[d]);
    strides.push_back(t.strides()[d]);
  }
  return Tensor::view_of(t.storage(), t.offset() + i * t.strides()[0], shape, strides, t.dtype());
}

Shape stacked_shape(int64_t rows, const Shape& row_shape) {
  Shape s = row_shape;
  s.insert(0, rows);
  return s;
}

}  // namespace spore::data::detail
