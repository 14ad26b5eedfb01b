// The depthwise k x k kernel compiled for the avx2 level (NOTE [SIMD levels]); ../conv_fused.cc
// calls it when the CPU runs this level.
#define DWCONV_FN dwconv_avx2
#include "../dwconv.inc"
