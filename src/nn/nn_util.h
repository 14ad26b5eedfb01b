// Small helpers shared by the layer implementations (argument checks with messages that name
// the cell).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "spore/error.h"
#include "spore/shape.h"
#include "spore/tensor.h"

namespace spore::nn::detail {

inline std::string list_str(const std::vector<int64_t>& v) { return Shape(v).str(); }

// A (height, width) pair from 1 or 2 values, each >= min_value.
inline std::vector<int64_t> pair_arg(const std::string& cell, const char* what, const std::vector<int64_t>& v,
                                     int64_t min_value) {
  if (v.size() != 1 && v.size() != 2)
    throw Error(ErrorCode::kValue, cell + ": " + what + " takes 1 or 2 values (height, width), got " +
                                       std::to_string(v.size()) + " " + list_str(v));
  std::vector<int64_t> p{v[0], v.size() == 2 ? v[1] : v[0]};
  for (int64_t x : p)
    if (x < min_value)
      throw Error(ErrorCode::kValue, cell + ": " + what + " " + list_str(v) + " must be >= " +
                                         std::to_string(min_value));
  return p;
}

inline void check_positive(const std::string& cell, const char* what, int64_t v) {
  if (v <= 0)
    throw Error(ErrorCode::kValue, cell + ": " + what + " must be > 0, got " + std::to_string(v));
}

inline void check_floating_input(const std::string& cell, const Tensor& x) {
  if (!is_floating(x.dtype()))
    throw Error(ErrorCode::kDType, cell + ": input is " + std::string(dtype_name(x.dtype())) + " " +
                                       x.shape().str() + "; it needs a floating dtype (cast it first)");
}

inline void check_floating_dtype(const std::string& cell, DType t) {
  if (!is_floating(t))
    throw Error(ErrorCode::kDType, cell + ": parameters must be floating, got dtype " + std::string(dtype_name(t)));
}

}  // namespace spore::nn::detail
