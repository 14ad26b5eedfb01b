// Helpers of the reduce and norm tests: tensors of any dtype built from and read back to float64
// without going through other ops (so these tests only need the ops they test), and views.
#pragma once
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "spore/tensor.h"
#include "test_util.h"

namespace spore::test {

// A contiguous tensor of `dtype` holding `values` (which must be exact in that dtype).
inline Tensor native_tensor(const std::vector<double>& values, const Shape& shape, DType dtype) {
  return visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    using S = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;
    std::vector<S> v(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      if constexpr (std::is_same_v<T, bool>) v[i] = values[i] != 0;
      else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) v[i] = T((float)values[i]);
      else v[i] = static_cast<T>(values[i]);
    }
    return Tensor::from_bytes(v.data(), shape, dtype, Device::cpu());
  });
}

// The values of a contiguous CPU tensor as float64 (what every op output is).
inline std::vector<double> native_values(const Tensor& t) {
  EXPECT_TRUE(t.is_contiguous());
  return visit_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using S = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;
    std::vector<double> out((size_t)t.numel());
    const S* p = static_cast<const S*>(t.data_ptr());
    for (size_t i = 0; i < out.size(); ++i) {
      if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) out[i] = (float)p[i];
      else out[i] = (double)p[i];
    }
    return out;
  });
}

// Like expect_close, reading through native_values.
inline void expect_values(const Tensor& got, const std::vector<double>& ref, Tol tol,
                          const std::string& what) {
  ASSERT_EQ(got.numel(), (int64_t)ref.size()) << what;
  expect_near(native_values(got), ref, tol, got.dtype(), what);
}

// "[0, -1]": axis lists may be negative, which Shape::str cannot print.
inline std::string list_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// Bytes of a tensor, for bitwise comparisons.
inline std::vector<uint8_t> raw_bytes(const Tensor& t) {
  std::vector<uint8_t> b(t.nbytes());
  if (!b.empty()) std::memcpy(b.data(), t.data_ptr(), b.size());
  return b;
}

// A non-contiguous view with the logical contents `values` of `shape`: the storage holds the
// values at scattered positions (axes permuted by `perm`, every axis padded by one, the first
// axis reversed), so the view has non-trivial strides, a negative stride and an offset.
inline Tensor strided_view(const std::vector<double>& values, const std::vector<int64_t>& shape,
                           DType dtype, const std::vector<int>& perm) {
  const int nd = (int)shape.size();
  // Physical layout: axes in `perm` order, each with extent shape+1.
  std::vector<int64_t> phys_ext(nd), phys_stride(nd);
  for (int i = 0; i < nd; ++i) phys_ext[i] = shape[perm[i]] + 1;
  int64_t total = 1;
  for (int i = nd - 1; i >= 0; --i) {
    phys_stride[i] = total;
    total *= phys_ext[i];
  }
  std::vector<int64_t> stride(nd);
  for (int i = 0; i < nd; ++i) stride[perm[i]] = phys_stride[i];
  int64_t offset = 1;  // skip the first element
  total += 1;
  // Reverse logical axis 0: start at its last index and walk backwards.
  if (nd > 0 && shape[0] > 0) {
    offset += (shape[0] - 1) * stride[0];
    stride[0] = -stride[0];
  }
  std::vector<double> buf((size_t)total, -777);
  std::vector<int64_t> idx(nd, 0);
  for (size_t lin = 0; lin < values.size(); ++lin) {
    int64_t off = offset;
    for (int i = 0; i < nd; ++i) off += idx[i] * stride[i];
    buf[(size_t)off] = values[lin];
    for (int i = nd - 1; i >= 0; --i) {
      if (++idx[i] < shape[i]) break;
      idx[i] = 0;
    }
  }
  // -777 marks padding; in bool and small ints it is not representable, so clamp it.
  if (!is_floating(dtype))
    for (double& v : buf)
      if (v == -777) v = dtype == DType::kBool ? 1 : (dtype == DType::kUInt8 ? 77 : -77);
  Tensor storage = native_tensor(buf, Shape{total}, dtype);
  Shape strides;  // built by push_back: the Shape constructors refuse negative values
  for (int64_t st : stride) strides.push_back(st);
  return Tensor::view_of(storage.storage(), offset, Shape(shape), strides, dtype);
}

}  // namespace spore::test
