// The optimizer update kernels compiled for the avx2 level (NOTE [SIMD levels]); registered by
// register_optim_kernels() in ../optim_kernels.cc when the CPU runs this level.
#define OPTIM_REGISTER register_optim_kernels_avx2
#include "../optim_kernels.inc"
