// Registers the optimizer update kernels (optim_kernels.inc) built for the CPU's SIMD level.
#include "cpu_features.h"
#include "cpu_kernels.h"

namespace spore::cpu {

void register_optim_kernels_generic();  // simd/optim_generic.cc
void register_optim_kernels_avx2();     // simd/optim_avx2.cc
void register_optim_kernels_avx512();   // simd/optim_avx512.cc

void register_optim_kernels() {
  switch (simd_level()) {
    case SimdLevel::kAvx512: return register_optim_kernels_avx512();
    case SimdLevel::kAvx2: return register_optim_kernels_avx2();
    default: return register_optim_kernels_generic();
  }
}

}  // namespace spore::cpu
