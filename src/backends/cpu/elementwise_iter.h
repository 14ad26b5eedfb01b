// The outer driver of the elementwise kernels: walks an output shape with up to four operands
// (any strides, broadcast inputs have stride 0), and hands the inner loops 1-D runs
// (NOTE [Elementwise loops]).
//
// NOTE [Elementwise iteration]
// Dimensions of size 1 are dropped and neighbouring dimensions that every operand walks as one
// (stride[outer] == stride[inner] * size[inner]) are merged, so a contiguous tensor of any rank
// is one run, and a row broadcast over a matrix is runs of the row length. Work of more than
// kElementwiseGrain elements is cut into chunks of the flattened index range for parallel_for;
// each element is computed by exactly one chunk with the same code, so results do not depend on
// the thread count. Smaller work runs on the calling thread and never touches the pool.
#pragma once
#include <algorithm>
#include <cstdint>

#include "thread_pool.h"
#include "spore/shape.h"
#include "spore/tensor.h"

namespace spore::cpu {

inline constexpr int64_t kElementwiseGrain = 32768;

template <int N>
struct StridedIter {
  int ndim = 0;
  int64_t numel = 0;
  int64_t shape[kMaxDims] = {};
  int64_t stride[N][kMaxDims] = {};  // elements
  char* base[N] = {};
  int64_t elem[N] = {};  // bytes per element

  // ops[0] is usually the output; every operand must broadcast to `shape`.
  StridedIter(const Shape& out_shape, const Tensor* const (&ops)[N]) {
    numel = out_shape.numel();
    for (int k = 0; k < N; ++k) {
      base[k] = static_cast<char*>(ops[k]->data_ptr());
      elem[k] = (int64_t)ops[k]->itemsize();
    }
    const int nd = out_shape.ndim();
    for (int i = 0; i < nd; ++i) {
      const int64_t size = out_shape[i];
      if (size == 1) continue;
      int64_t st[N];
      for (int k = 0; k < N; ++k) {
        const Shape& s = ops[k]->shape();
        int j = i - (nd - s.ndim());
        st[k] = (j < 0 || s[j] == 1) ? 0 : ops[k]->strides()[j];
      }
      bool merge = ndim > 0;
      for (int k = 0; k < N && merge; ++k) merge = stride[k][ndim - 1] == st[k] * size;
      if (merge) {
        shape[ndim - 1] *= size;
        for (int k = 0; k < N; ++k) stride[k][ndim - 1] = st[k];
      } else {
        shape[ndim] = size;
        for (int k = 0; k < N; ++k) stride[k][ndim] = st[k];
        ++ndim;
      }
    }
  }

  // fn(char* const ptrs[N], const int64_t inner_strides[N], int64_t n) for each run.
  template <class Fn>
  void run(Fn&& fn) const {
    if (numel == 0) return;
    if (ndim == 0) {  // one element
      int64_t zero[N] = {};
      fn(base, zero, int64_t{1});
      return;
    }
    auto range = [&](int64_t begin, int64_t end) {
      const int last = ndim - 1;
      const int64_t inner = shape[last];
      int64_t idx[kMaxDims];
      int64_t off[N] = {};
      int64_t rem = begin;
      for (int d = last; d >= 0; --d) {
        idx[d] = rem % shape[d];
        rem /= shape[d];
        for (int k = 0; k < N; ++k) off[k] += idx[d] * stride[k][d];
      }
      int64_t inner_stride[N];
      for (int k = 0; k < N; ++k) inner_stride[k] = stride[k][last];
      for (int64_t pos = begin; pos < end;) {
        const int64_t n = std::min(inner - idx[last], end - pos);
        char* ptrs[N];
        for (int k = 0; k < N; ++k) ptrs[k] = base[k] + off[k] * elem[k];
        fn(ptrs, inner_stride, n);
        pos += n;
        idx[last] += n;
        for (int k = 0; k < N; ++k) off[k] += n * stride[k][last];
        for (int d = last; d > 0 && idx[d] == shape[d]; --d) {  // carry into outer dimensions
          idx[d] = 0;
          ++idx[d - 1];
          for (int k = 0; k < N; ++k) off[k] += stride[k][d - 1] - shape[d] * stride[k][d];
        }
      }
    };
    if (numel <= kElementwiseGrain || pool_threads() == 1) range(0, numel);
    else parallel_for(numel, kElementwiseGrain, range);
  }
};

// Runs fn(begin, end) over [0, n), split across the pool only when n is large.
template <class Fn>
void run_flat(int64_t n, Fn&& fn) {
  if (n <= kElementwiseGrain || pool_threads() == 1) fn(int64_t{0}, n);
  else parallel_for(n, kElementwiseGrain, fn);
}

}  // namespace spore::cpu
