// Element types and the rules that combine them.
//
// NOTE [Type promotion]
// Binary ops first bring both operands to one dtype, like PyTorch and NumPy:
//   * categories rank bool < integer < floating; the result takes the higher category;
//   * inside a category the wider type wins; int8 with uint8 gives int32 (no int16 here);
//     float16 with bfloat16 gives float32, since neither holds the other's values;
//   * a scalar (a C++ number passed to an op) never widens a tensor of its own category:
//     f16_tensor + 2.5 stays float16, i32_tensor + 2 stays int32; a floating scalar with an
//     integer or bool tensor gives the default float dtype (float32).
// Comparisons compute in the promoted dtype and return bool. True division of integers
// returns float32. Reductions that sum (sum, mean over integers is an error) widen integers
// and bool to int64; float16/bfloat16 accumulate in float32 and round once at the end.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "spore/half.h"

namespace spore {

enum class DType : uint8_t {
  kBool = 0,
  kInt8,
  kUInt8,
  kInt32,
  kInt64,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
};
inline constexpr int kNumDTypes = 9;

inline constexpr DType kAllDTypes[kNumDTypes] = {
    DType::kBool,    DType::kInt8,     DType::kUInt8,   DType::kInt32,  DType::kInt64,
    DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64};

constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::kBool:
    case DType::kInt8:
    case DType::kUInt8: return 1;
    case DType::kFloat16:
    case DType::kBFloat16: return 2;
    case DType::kInt32:
    case DType::kFloat32: return 4;
    case DType::kInt64:
    case DType::kFloat64: return 8;
  }
  return 0;
}

constexpr bool is_floating(DType t) {
  return t == DType::kFloat16 || t == DType::kBFloat16 || t == DType::kFloat32 ||
         t == DType::kFloat64;
}
constexpr bool is_integral(DType t) {  // bool excluded
  return t == DType::kInt8 || t == DType::kUInt8 || t == DType::kInt32 || t == DType::kInt64;
}
constexpr bool is_low_precision(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16; }

// "float32", "bfloat16", ... (the names the IR, reports and error messages use).
const char* dtype_name(DType t);
// Parses a dtype name; also accepts the short forms f32, f16, bf16, i64, ... Throws kDType.
DType dtype_from_name(std::string_view name);

// Result dtype of combining two tensors (NOTE [Type promotion]).
DType promote_types(DType a, DType b);
// Result dtype of combining a tensor with a scalar that is floating (or not).
DType promote_with_scalar(DType tensor, bool scalar_is_floating);

// Compile-time mapping between C++ types and dtypes.
template <typename T>
struct dtype_of;
template <> struct dtype_of<bool> { static constexpr DType value = DType::kBool; };
template <> struct dtype_of<int8_t> { static constexpr DType value = DType::kInt8; };
template <> struct dtype_of<uint8_t> { static constexpr DType value = DType::kUInt8; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::kInt32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::kInt64; };
template <> struct dtype_of<Half> { static constexpr DType value = DType::kFloat16; };
template <> struct dtype_of<BFloat16> { static constexpr DType value = DType::kBFloat16; };
template <> struct dtype_of<float> { static constexpr DType value = DType::kFloat32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::kFloat64; };
template <typename T>
inline constexpr DType dtype_v = dtype_of<T>::value;

// Calls fn(T{}) with the C++ type of a runtime dtype: the one place a dtype becomes a type.
template <typename Fn>
decltype(auto) visit_dtype(DType t, Fn&& fn) {
  switch (t) {
    case DType::kBool: return fn(bool{});
    case DType::kInt8: return fn(int8_t{});
    case DType::kUInt8: return fn(uint8_t{});
    case DType::kInt32: return fn(int32_t{});
    case DType::kInt64: return fn(int64_t{});
    case DType::kFloat16: return fn(Half{});
    case DType::kBFloat16: return fn(BFloat16{});
    case DType::kFloat32: return fn(float{});
    case DType::kFloat64: break;
  }
  return fn(double{});
}

}  // namespace spore
