// The LLM gradient kernels compiled for the avx2 level (NOTE [SIMD levels]), read by
// ../llm_grad_kernels.cc when the CPU runs this level.
#define LLM_GRAD_FILL fill_llm_grad_kernels_avx2
#include "../llm_grad_kernels.inc"
