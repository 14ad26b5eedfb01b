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

ExpSumFn softmax_exp_sum_generic();
ExpSumFn softmax_exp_sum_avx2();
ExpSumFn softmax_exp_sum_avx512();
ExpSumFn softmax_exp_sum();  // the current level's

}  // namespace spore::cpu
