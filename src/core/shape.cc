#include "spore/shape.h"

#include "spore/error.h"

namespace spore {

namespace {
[[noreturn]] void too_many_dims(size_t n) {
  throw Error(ErrorCode::kShape, "a tensor has at most " + std::to_string(kMaxDims) +
                                     " dimensions; got " + std::to_string(n));
}
void check_dim(int64_t d) {
  if (d < 0) throw Error(ErrorCode::kShape, "dimension sizes must be >= 0, got " + std::to_string(d));
}
}  // namespace

Shape::Shape(std::initializer_list<int64_t> dims) : Shape(std::span<const int64_t>(dims.begin(), dims.size())) {}

Shape::Shape(std::span<const int64_t> dims) {
  if (dims.size() > (size_t)kMaxDims) too_many_dims(dims.size());
  for (int64_t d : dims) check_dim(d);
  ndim_ = (int)dims.size();
  for (int i = 0; i < ndim_; ++i) dims_[i] = dims[i];
}

void Shape::numel_overflow() const {
  throw Error(ErrorCode::kShape, "shape " + str() + " has more elements than fit in int64");
}

void Shape::push_back(int64_t d) {
  if (ndim_ == kMaxDims) too_many_dims(ndim_ + 1);
  dims_[ndim_++] = d;
}

void Shape::insert(int pos, int64_t d) {
  if (ndim_ == kMaxDims) too_many_dims(ndim_ + 1);
  for (int i = ndim_; i > pos; --i) dims_[i] = dims_[i - 1];
  dims_[pos] = d;
  ++ndim_;
}

void Shape::erase(int pos) {
  for (int i = pos; i + 1 < ndim_; ++i) dims_[i] = dims_[i + 1];
  --ndim_;
}

void Shape::resize(int ndim, int64_t fill) {
  if (ndim > kMaxDims) too_many_dims(ndim);
  for (int i = ndim_; i < ndim; ++i) dims_[i] = fill;
  ndim_ = ndim;
}

bool Shape::operator==(const Shape& o) const {
  if (ndim_ != o.ndim_) return false;
  for (int i = 0; i < ndim_; ++i)
    if (dims_[i] != o.dims_[i]) return false;
  return true;
}

std::string Shape::str() const {
  std::string s = "[";
  for (int i = 0; i < ndim_; ++i) {
    if (i) s += ", ";
    s += std::to_string(dims_[i]);
  }
  return s + "]";
}

Shape contiguous_strides(const Shape& shape) {
  Shape st;
  st.resize(shape.ndim());
  int64_t s = 1;
  for (int i = shape.ndim() - 1; i >= 0; --i) {
    st[i] = s;
    // NOTE [Shape overflow]: a 0 extent counts as 1 here, so the other strides stay exact and
    // a view of an empty tensor can be sliced along them without wrapping.
    if (__builtin_mul_overflow(s, shape[i] > 0 ? shape[i] : 1, &s))
      throw Error(ErrorCode::kShape, "shape " + shape.str() + " has more elements than fit in int64");
  }
  return st;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  int n = std::max(a.ndim(), b.ndim());
  Shape out;
  out.resize(n);
  for (int i = 0; i < n; ++i) {
    int ia = a.ndim() - n + i, ib = b.ndim() - n + i;
    int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1)
      throw Error(ErrorCode::kShape, std::string(op) + ": shapes " + a.str() + " and " + b.str() +
                                         " cannot be broadcast (dimension " + std::to_string(i) +
                                         ": " + std::to_string(da) + " vs " + std::to_string(db) +
                                         ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int normalize_axis(int64_t axis, int ndim, const char* op) {
  int64_t lim = ndim == 0 ? 1 : ndim;  // a 0-d tensor accepts axis 0 / -1 like NumPy's keepdims
  if (axis < -lim || axis >= lim)
    throw Error(ErrorCode::kIndex, std::string(op) + ": axis " + std::to_string(axis) +
                                       " is out of range for a tensor of " + std::to_string(ndim) +
                                       " dimensions (valid: " + std::to_string(-lim) + " to " +
                                       std::to_string(lim - 1) + ")");
  return (int)(axis < 0 ? axis + lim : axis);
}

}  // namespace spore
