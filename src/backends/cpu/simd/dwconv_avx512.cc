// The depthwise 3x3 kernel compiled for the avx512 level (NOTE [SIMD levels]); ../conv_fused.cc
// calls it when the CPU runs this level.
#define DWCONV_FN dwconv3x3_avx512
#include "../dwconv.inc"
