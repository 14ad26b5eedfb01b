// The matmul_q kernels compiled for the generic level (NOTE [SIMD levels]), read by
// ../llm_kernels.cc when the CPU runs this level.
#define QUANT_FILL fill_quant_kernels_generic
#include "../quant_kernels.inc"
