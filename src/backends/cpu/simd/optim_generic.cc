// The optimizer update kernels compiled for the generic level (NOTE [SIMD levels]); registered by
// register_optim_kernels() in ../optim_kernels.cc when the CPU runs this level.
#define OPTIM_REGISTER register_optim_kernels_generic
#include "../optim_kernels.inc"
