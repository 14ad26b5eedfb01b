// The direct matmul kernels compiled with AVX2 + FMA flags (NOTE [SIMD levels]); chosen by
// matmul_direct() in ../matmul_direct.cc when the CPU has them.
#define MATMUL_DIRECT_ENTRY matmul_direct_avx2
#include "../matmul_direct.inc"
