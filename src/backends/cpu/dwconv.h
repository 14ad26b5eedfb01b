// Internal: the depthwise 3x3 convolution plane kernel of Lite's fused convolution (NOTE [Lite
// executor]), compiled once per SIMD level (simd/dwconv_<level>.cc, NOTE [SIMD levels]) and chosen
// at call time by simd_level(), so SPORE_CPU_ISA and set_simd_level switch it as they do the
// elementwise loops.
#pragma once
#include <cstdint>

namespace spore::cpu {

// One (n, c) plane: y[ho, wo] = clamp(start + sum_ij w[i, j] * x[ho*s - 1 + i, wo*s - 1 + j], lo, hi)
// with zero padding of 1 on every side, stride s in {1, 2}; start is `bias`, or y's own value
// when `accumulate` (a convolution over a few input channels sums their planes this way, the
// stem of MobileNetV2 with its 3). `zero` holds at least w + 2 zeros.
// Each output element is summed in the same order (rows i, then taps j) at every level, with
// fused multiply-adds where the level has them, so levels differ by the last bits only.
using DwConv3x3Fn = void (*)(const float* x, const float* w9, float bias, float lo, float hi, float* y, int64_t h,
                             int64_t w, int64_t ho, int64_t wo, int stride, bool accumulate,
                             const float* zero);

DwConv3x3Fn dwconv3x3_generic();
DwConv3x3Fn dwconv3x3_avx2();
DwConv3x3Fn dwconv3x3_avx512();
DwConv3x3Fn dwconv3x3();  // the current level's

}  // namespace spore::cpu
