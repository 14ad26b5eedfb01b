// dynamic_quant_matmul compiled for the avx512 level (NOTE [SIMD levels]); registered by
// register_int8_kernels() in ../int8_kernels.cc when the CPU runs this level.
#define INT8_REGISTER register_int8_kernels_avx512
#include "../int8_matmul.inc"
