// Printing: "Tensor(shape=[2, 2], dtype=float32, device=cpu,\n[[1, 2],\n [3, 4]])".
#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>

#include "spore/tensor.h"

namespace spore {

namespace {
constexpr int64_t kEdge = 3;        // elements shown at each end of a long axis
constexpr int64_t kSummarizeAt = 1000;  // tensors larger than this are abbreviated

std::string format_value(double v, DType dtype) {
  char buf[48];
  if (dtype == DType::kBool) return v != 0 ? "True" : "False";
  if (!is_floating(dtype)) {
    std::snprintf(buf, sizeof buf, "%lld", (long long)v);
  } else if (std::isnan(v)) {
    return "nan";
  } else if (std::isinf(v)) {
    return v > 0 ? "inf" : "-inf";
  } else {
    std::snprintf(buf, sizeof buf, "%.*g", dtype == DType::kFloat64 ? 10 : 6, v);
  }
  return buf;
}

void format_axis(std::ostream& os, const std::vector<double>& v, const Shape& shape,
                 const Shape& strides, int axis, int64_t base, DType dtype, bool summarize,
                 int indent) {
  if (axis == shape.ndim()) {
    os << format_value(v[(size_t)base], dtype);
    return;
  }
  os << '[';
  int64_t n = shape[axis];
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdge && i == kEdge) {
      os << "...";
      i = n - kEdge - 1;
      os << (axis + 1 == shape.ndim() ? ", " : ",\n" + std::string(indent + 1, ' '));
      continue;
    }
    format_axis(os, v, shape, strides, axis + 1, base + i * strides[axis], dtype, summarize,
                indent + 1);
    if (i + 1 < n) os << (axis + 1 == shape.ndim() ? ", " : ",\n" + std::string(indent + 1, ' '));
  }
  os << ']';
}
}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "Tensor(undefined)";
  std::ostringstream os;
  os << "Tensor(shape=" << shape().str() << ", dtype=" << dtype_name(dtype())
     << ", device=" << device().str() << ",\n";
  std::vector<double> values = to_vector<double>();
  format_axis(os, values, shape(), contiguous_strides(shape()), 0, 0, dtype(),
              numel() > kSummarizeAt, 0);
  os << ')';
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace spore
