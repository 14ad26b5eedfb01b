// Registers dynamic_quant_matmul's kernel compiled for the CPU's SIMD level (NOTE [SIMD levels]).
#include "cpu_features.h"
#include "cpu_kernels.h"

namespace spore::cpu {

void register_int8_kernels_generic();  // simd/int8_generic.cc
void register_int8_kernels_avx2();     // simd/int8_avx2.cc
void register_int8_kernels_avx512();   // simd/int8_avx512.cc

void register_int8_kernels() {
  switch (simd_level()) {
    case SimdLevel::kAvx512: return register_int8_kernels_avx512();
    case SimdLevel::kAvx2: return register_int8_kernels_avx2();
    default: return register_int8_kernels_generic();
  }
}

}  // namespace spore::cpu
