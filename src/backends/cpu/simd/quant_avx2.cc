// The matmul_q kernels compiled for the avx2 level (NOTE [SIMD levels]), read by
// ../llm_kernels.cc when the CPU runs this level.
#define QUANT_FILL fill_quant_kernels_avx2
#include "../quant_kernels.inc"
