// Internal: the depthwise k x k convolution plane kernel of Lite's fused convolution (NOTE [Lite
// executor]), compiled once per SIMD level (simd/dwconv_<level>.cc, NOTE [SIMD levels]) and chosen
// at call time by simd_level(), so SPORE_CPU_ISA and set_simd_level switch it as they do the
// elementwise loops.
#pragma once
#include <cstdint>

namespace spore::cpu {

// The kernel sizes the plane kernel has: MobileNetV2's 3x3, MobileNetV3's and PP-LCNet's 5x5
// (PaddleOCR's backbones), ConvNeXt's 7x7.
inline bool dwconv_kernel_size(int64_t k) { return k == 3 || k == 5 || k == 7; }

// One (n, c) plane: y[ho, wo] = clamp(start + sum_ij w[i, j] * x[ho*s - p + i, wo*s - p + j], lo, hi)
// for a k x k kernel (dwconv_kernel_size) with zero padding p = k / 2 on every side, stride s in
// {1, 2}; start is `bias`, or y's own value when `accumulate` (a convolution over a few input
// channels sums their planes this way, the stem of MobileNetV2 with its 3). `zero` holds at
// least w + k - 1 zeros.
// Each output element is summed in the same order (each row's k taps, then the rows in turn)
// at every level, with fused multiply-adds where the level has them, so levels differ by the
// last bits only.
using DwConvFn = void (*)(const float* x, const float* wk, int k, float bias, float lo, float hi, float* y, int64_t h,
                          int64_t w, int64_t ho, int64_t wo, int stride, bool accumulate, const float* zero);

DwConvFn dwconv_generic();
DwConvFn dwconv_avx2();
DwConvFn dwconv_avx512();
DwConvFn dwconv();  // the current level's

}  // namespace spore::cpu
