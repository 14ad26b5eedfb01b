// The LLM block kernels compiled for the avx2 level (NOTE [SIMD levels]), read by
// ../llm_kernels.cc when the CPU runs this level.
#define LLM_FILL fill_llm_kernels_avx2
#include "../llm_kernels.inc"
