// Internal to the CPU backend: walking strided N-d tensors in row-major order, and a strided
// block copy that only cares about element size. Used by the shape and index kernels.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "thread_pool.h"
#include "spore/shape.h"

namespace spore::cpu {

// Elements per parallel chunk: big enough that waking a worker pays off.
inline constexpr int64_t kCopyGrain = 32768;

inline int64_t dot_coords(const int64_t* c, const Shape& strides) {
  int64_t o = 0;
  for (int d = 0; d < strides.ndim(); ++d) o += c[d] * strides[d];
  return o;
}

// Visits the elements [begin, end) of `shape` (row-major order) in runs along the last axis:
// fn(first_index, coords_of_first, run_length). A 0-d shape is one run of one element.
template <typename Fn>
void for_each_run(const Shape& shape, int64_t begin, int64_t end, Fn&& fn) {
  int64_t c[kMaxDims] = {};
  const int n = shape.ndim();
  if (n == 0) {
    if (begin < end) fn(begin, c, int64_t{1});
    return;
  }
  int64_t r = begin;
  for (int d = n - 1; d >= 0; --d) {
    c[d] = r % shape[d];
    r /= shape[d];
  }
  for (int64_t i = begin; i < end;) {
    const int64_t run = std::min(end - i, shape[n - 1] - c[n - 1]);
    fn(i, static_cast<const int64_t*>(c), run);
    i += run;
    c[n - 1] += run;
    for (int d = n - 1; d > 0 && c[d] == shape[d]; --d) {
      c[d] = 0;
      ++c[d - 1];
    }
  }
}

// for_each_run split over the thread pool; each element is visited once whatever the thread
// count, so results never depend on it.
template <typename Fn>
void parallel_runs(const Shape& shape, int64_t grain, Fn&& fn) {
  const int64_t n = shape.numel();
  if (n == 0) return;
  if (n <= grain) {
    for_each_run(shape, 0, n, fn);
    return;
  }
  parallel_for(n, grain, [&](int64_t b, int64_t e) { for_each_run(shape, b, e, fn); });
}

// Copies `count` elements of `elem` bytes with element strides ss / ds.
inline void copy_elements(const char* src, int64_t ss, char* dst, int64_t ds, int64_t count, size_t elem) {
  if (ss == 1 && ds == 1) {
    std::memcpy(dst, src, (size_t)count * elem);
    return;
  }
  auto loop = [&](auto word) {
    using W = decltype(word);
    for (int64_t k = 0; k < count; ++k) std::memcpy(dst + k * ds * (int64_t)sizeof(W), src + k * ss * (int64_t)sizeof(W), sizeof(W));
  };
  switch (elem) {
    case 1: loop(uint8_t{}); break;
    case 2: loop(uint16_t{}); break;
    case 4: loop(uint32_t{}); break;
    default: loop(uint64_t{}); break;
  }
}

// Drops size-1 dims and merges dims that are contiguous with each other in both layouts, so that
// a copy runs over as few, as long rows as possible.
inline void coalesce(Shape& shape, Shape& a, Shape& b) {
  Shape s, sa, sb;
  for (int d = 0; d < shape.ndim(); ++d) {
    if (shape[d] == 1) continue;
    const int k = s.ndim() - 1;
    if (k >= 0 && sa[k] == a[d] * shape[d] && sb[k] == b[d] * shape[d]) {
      s[k] *= shape[d];
      sa[k] = a[d];
      sb[k] = b[d];
      continue;
    }
    s.push_back(shape[d]);
    sa.push_back(a[d]);
    sb.push_back(b[d]);
  }
  shape = s;
  a = sa;
  b = sb;
}

// dst[i] = src[i] for every element of `shape`, each side with its own element strides.
inline void strided_copy(const void* src, Shape src_strides, void* dst, Shape dst_strides, Shape shape,
                         size_t elem) {
  if (shape.numel() == 0) return;
  coalesce(shape, src_strides, dst_strides);
  const int n = shape.ndim();
  const int64_t ss = n ? src_strides[n - 1] : 1, ds = n ? dst_strides[n - 1] : 1;
  const char* s = static_cast<const char*>(src);
  char* d = static_cast<char*>(dst);
  const int64_t e = (int64_t)elem;
  parallel_runs(shape, kCopyGrain, [&](int64_t, const int64_t* c, int64_t run) {
    copy_elements(s + dot_coords(c, src_strides) * e, ss, d + dot_coords(c, dst_strides) * e, ds, run, elem);
  });
}

}  // namespace spore::cpu
