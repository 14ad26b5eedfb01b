#include "spore/dtype.h"

#include "spore/error.h"

namespace spore {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kBool: return "bool";
    case DType::kInt8: return "int8";
    case DType::kUInt8: return "uint8";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
    case DType::kFloat32: return "float32";
    case DType::kFloat64: return "float64";
  }
  return "?";
}

DType dtype_from_name(std::string_view name) {
  struct Alias {
    const char* name;
    DType dtype;
  };
  static constexpr Alias kAliases[] = {
      {"bool", DType::kBool},       {"int8", DType::kInt8},       {"i8", DType::kInt8},
      {"uint8", DType::kUInt8},     {"u8", DType::kUInt8},        {"int32", DType::kInt32},
      {"i32", DType::kInt32},       {"int64", DType::kInt64},     {"i64", DType::kInt64},
      {"float16", DType::kFloat16}, {"f16", DType::kFloat16},     {"half", DType::kFloat16},
      {"bfloat16", DType::kBFloat16}, {"bf16", DType::kBFloat16}, {"float32", DType::kFloat32},
      {"f32", DType::kFloat32},     {"float", DType::kFloat32},   {"float64", DType::kFloat64},
      {"f64", DType::kFloat64},     {"double", DType::kFloat64},
  };
  for (const Alias& a : kAliases)
    if (name == a.name) return a.dtype;
  throw Error(ErrorCode::kDType, "unknown dtype name '" + std::string(name) +
                                     "'; expected one of bool, int8, uint8, int32, int64, "
                                     "float16, bfloat16, float32, float64");
}

namespace {
int category(DType t) { return t == DType::kBool ? 0 : is_integral(t) ? 1 : 2; }
}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  int ca = category(a), cb = category(b);
  if (ca != cb) return ca > cb ? a : b;
  if (ca == 1) {
    bool mixed_sign = (a == DType::kUInt8) != (b == DType::kUInt8);
    if (mixed_sign && dtype_size(a) == 1 && dtype_size(b) == 1) return DType::kInt32;
    return dtype_size(a) >= dtype_size(b) ? a : b;  // equal sizes only meet when mixed_sign
  }
  // floating: 16-bit pair of different kinds meets in float32
  if (is_low_precision(a) && is_low_precision(b)) return DType::kFloat32;
  return dtype_size(a) >= dtype_size(b) ? a : b;
}

DType promote_with_scalar(DType tensor, bool scalar_is_floating) {
  if (scalar_is_floating) return is_floating(tensor) ? tensor : DType::kFloat32;
  return tensor == DType::kBool ? DType::kInt64 : tensor;
}

}  // namespace spore
