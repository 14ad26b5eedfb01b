// The public view of the CPU backend's feature detection (include/spore/cpu_info.h).
#include "spore/cpu_info.h"

#include "cpu_features.h"

namespace spore {

CpuInfo cpu_info() {
  const cpu::CpuFeatures& f = cpu::cpu_features();
  CpuInfo info;
  info.vendor = f.vendor;
  info.model = f.model;
  info.features = f.names();
  info.simd_level = cpu::simd_level_name(cpu::simd_level());
  info.best_simd_level = cpu::simd_level_name(cpu::best_simd_level());
  return info;
}

}  // namespace spore
