// The LLM block kernels compiled for the generic level (NOTE [SIMD levels]), read by
// ../llm_kernels.cc when the CPU runs this level.
#define LLM_FILL fill_llm_kernels_generic
#include "../llm_kernels.inc"
