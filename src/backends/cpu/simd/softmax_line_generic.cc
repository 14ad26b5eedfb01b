// softmax's exponentials and their sum compiled for the generic level (NOTE [SIMD levels]);
// ../norm_kernels.cc calls it when the CPU runs this level.
#define SOFTMAX_LINE_FN softmax_exp_sum_generic
#define SOFTMAX_WHOLE_LINE_FN softmax_line_generic
#define SOFTMAX_LINE_BYTES 16
#include "../softmax_line.inc"
