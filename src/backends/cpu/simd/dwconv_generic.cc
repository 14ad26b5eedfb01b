// The depthwise 3x3 kernel compiled for the generic level (NOTE [SIMD levels]); ../conv_fused.cc
// calls it when the CPU runs this level.
#define DWCONV_FN dwconv3x3_generic
#include "../dwconv.inc"
