// The element-wise reduction the rank-order all-reduce applies on rank 0, one rank at a time.
#include <algorithm>
#include <cstdint>

#include "dist/backends.h"
#include "spore/error.h"

namespace spore::dist::detail {

namespace {

template <typename T>
void reduce_typed(T* dst, const T* src, int64_t count, ReduceOp op) {
  if (op == ReduceOp::kMax) {
    for (int64_t i = 0; i < count; ++i) dst[i] = std::max(dst[i], src[i]);
  } else {
    for (int64_t i = 0; i < count; ++i) dst[i] = (T)(dst[i] + src[i]);
  }
}

}  // namespace

void reduce_into(void* dst, const void* src, int64_t count, DType dtype, ReduceOp op) {
  switch (dtype) {
    case DType::kInt8:
      return reduce_typed((int8_t*)dst, (const int8_t*)src, count, op);
    case DType::kUInt8:
      return reduce_typed((uint8_t*)dst, (const uint8_t*)src, count, op);
    case DType::kInt32:
      return reduce_typed((int32_t*)dst, (const int32_t*)src, count, op);
    case DType::kInt64:
      return reduce_typed((int64_t*)dst, (const int64_t*)src, count, op);
    case DType::kFloat32:
      return reduce_typed((float*)dst, (const float*)src, count, op);
    case DType::kFloat64:
      return reduce_typed((double*)dst, (const double*)src, count, op);
    default:
      throw Error(ErrorCode::kInternal,
                  std::string("dist: no reduction for ") + dtype_name(dtype) +
                      " reached a backend (the group converts 16-bit floats to float32)");
  }
}

}  // namespace spore::dist::detail
