// Facts about the host CPU that the CPU backend found and acts on: what reports (spore env, the
// evidence harness) print. A public header, so the harness needs no backend internals.
#pragma once
#include <string>
#include <vector>

namespace spore {

struct CpuInfo {
  std::string vendor;
  std::string model;                  // empty when cpuid has no brand string
  std::vector<std::string> features;  // the instruction-set flags that are set, lower case
  std::string simd_level;             // the level the kernels use now (NOTE [SIMD levels])
  std::string best_simd_level;        // the best level this CPU and OS allow
};

CpuInfo cpu_info();

}  // namespace spore
