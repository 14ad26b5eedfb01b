// softmax's exponentials and their sum compiled for the avx2 level (NOTE [SIMD levels]);
// ../norm_kernels.cc calls it when the CPU runs this level.
#define SOFTMAX_LINE_FN softmax_exp_sum_avx2
#define SOFTMAX_WHOLE_LINE_FN softmax_line_avx2
#define SOFTMAX_LINE_BYTES 32
#include "../softmax_line.inc"
