#include "describe.h"

namespace spore::ops {

std::string ints_str(const std::vector<int64_t>& values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "]";
}

std::string describe(const Tensor& t) { return std::string(dtype_name(t.dtype())) + t.shape().str(); }

}  // namespace spore::ops
