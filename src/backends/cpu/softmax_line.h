// Internal: the exponentials and their sum for softmax over one contiguous float32 line, the
// bulk of a softmax over a long last axis (a recogniser's 18,710-class output), compiled once per
// SIMD level (simd/softmax_line_<level>.cc, NOTE [SIMD levels]) and chosen at call time. The
// baseline build of norm_kernels.cc ran it at SSE2's width: 2.8 ns an element.
#pragma once
#include <cstdint>

namespace spore::cpu {

// s[k] = exp_f32(s[k] - shift) for k < n, in place (reduce_exp.h's exp); returns their sum in
// float64, four lanes (lane k % 4) added as (a0 + a1) + (a2 + a3): the same order at every level.
using ExpSumFn = double (*)(float* s, int64_t n, float shift);

namespace {  // internal linkage: compiled into each level's file (NOTE [SIMD levels])

// Sum of e[0..n) in float64, 4 lanes (lane k % 4), added as (a0 + a1) + (a2 + a3).
template <class C>
double line_sum(const C* e, int64_t n) {
  double a[4] = {};
  int64_t k = 0;
  for (; k + 4 <= n; k += 4)
    for (int l = 0; l < 4; ++l) a[l] += (double)e[k + l];
  for (int l = 0; k < n; ++k, ++l) a[l] += (double)e[k];
  return (a[0] + a[1]) + (a[2] + a[3]);
}

}  // namespace

// softmax of the float32 line src[0..n) into dst[0..n) (not overlapping): dst[k] =
// exp(src[k] - max) * float(1 / sum), the sum as ExpSumFn adds it, so equal to exp_sum's path.
using SoftmaxLineFn = void (*)(const float* src, float* dst, int64_t n);

ExpSumFn softmax_exp_sum_generic();
ExpSumFn softmax_exp_sum_avx2();
ExpSumFn softmax_exp_sum_avx512();
ExpSumFn softmax_exp_sum();  // the current level's
SoftmaxLineFn softmax_line_generic();
SoftmaxLineFn softmax_line_avx2();
SoftmaxLineFn softmax_line_avx512();
SoftmaxLineFn softmax_line();  // the current level's

}  // namespace spore::cpu
