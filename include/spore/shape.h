// Shape: the extents of a tensor, held inline (no heap) because every op builds several.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

namespace spore {

inline constexpr int kMaxDims = 8;

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(std::span<const int64_t> dims);
  Shape(const std::vector<int64_t>& dims) : Shape(std::span<const int64_t>(dims)) {}

  int ndim() const { return ndim_; }
  int64_t operator[](int i) const { return dims_[i]; }
  int64_t& operator[](int i) { return dims_[i]; }
  const int64_t* begin() const { return dims_; }
  const int64_t* end() const { return dims_ + ndim_; }
  std::span<const int64_t> dims() const { return {dims_, (size_t)ndim_}; }
  std::vector<int64_t> to_vector() const { return {begin(), end()}; }
  // Throws kShape when the product of the extents other than 0 does not fit in int64, even
  // when some extent is 0 (NOTE [Shape overflow]): such a shape's strides would wrap. One pass,
  // no branch on the zero test, since this is on every op's path.
  int64_t numel() const {
    int64_t n = 1;
    bool empty = false;
    for (int i = 0; i < ndim_; ++i) {
      const int64_t d = dims_[i];
      empty |= d == 0;
      if (__builtin_mul_overflow(n, d == 0 ? int64_t{1} : d, &n)) numel_overflow();
    }
    return empty ? 0 : n;
  }
  void push_back(int64_t d);
  void insert(int pos, int64_t d);
  void erase(int pos);
  void resize(int ndim, int64_t fill = 1);

  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }
  std::string str() const;  // "[2, 3]"

 private:
  [[noreturn]] void numel_overflow() const;
  int64_t dims_[kMaxDims] = {};
  int ndim_ = 0;
};

// Strides of a row-major (C-contiguous) layout, in elements. Throws kShape when the extents
// (0s counted as 1) overflow int64, empty or not (NOTE [Shape overflow]).
Shape contiguous_strides(const Shape& shape);
// NumPy broadcasting of two shapes; throws kShape naming `op` and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
// Normalises a possibly negative axis against ndim; throws kIndex naming `op`.
int normalize_axis(int64_t axis, int ndim, const char* op);

}  // namespace spore
