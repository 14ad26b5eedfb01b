// The LLM block kernels compiled for the avx512 level (NOTE [SIMD levels]), read by
// ../llm_kernels.cc when the CPU runs this level.
#define LLM_FILL fill_llm_kernels_avx512
#include "../llm_kernels.inc"
