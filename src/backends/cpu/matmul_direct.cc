// The direct matmul kernels, generic build, and the choice of SIMD level (matmul_direct.inc).
#include "cpu_features.h"

#define MATMUL_DIRECT_ENTRY matmul_direct_generic
#include "matmul_direct.inc"

namespace spore::cpu {

void matmul_direct_avx2(const MatmulGeometry& g);  // simd/matmul_direct_avx2.cc

void matmul_direct(const MatmulGeometry& g) {
  if (simd_level() >= SimdLevel::kAvx2) return matmul_direct_avx2(g);
  matmul_direct_generic(g);
}

}  // namespace spore::cpu
