// The matmul_q kernels compiled for the avx512 level on CPUs with AVX-512 VNNI (NOTE [SIMD
// levels]): the same source, whose integer dot products then take vpdpbusd. Read by
// ../llm_kernels.cc when the CPU runs the avx512 level and has VNNI.
#define QUANT_FILL fill_quant_kernels_avx512vnni
#include "../quant_kernels.inc"
