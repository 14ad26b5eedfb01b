// What the CPU can do, read once with cpuid, and which SIMD level the kernels use.
#pragma once
#include <string>
#include <vector>

namespace spore::cpu {

struct CpuFeatures {
  std::string vendor, model;
  bool sse42 = false, avx = false, avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
  bool avx512bf16 = false, avx512fp16 = false, avx512vnni = false, amx_tile = false;
  bool os_avx = false, os_avx512 = false;  // the OS saves ymm / zmm state (xgetbv)
  std::vector<std::string> names() const;  // the flags that are set, lower case
};

const CpuFeatures& cpu_features();

// NOTE [SIMD levels]
// Kernels are compiled several times, once per level, with the matching -m flags, and the
// level is picked at start-up from cpuid, so one binary runs on any x86-64 and uses what the
// machine has. SPORE_CPU_ISA=generic|avx2|avx512 lowers the level (tests compare levels; a level
// the CPU lacks is refused and the best available one is used instead).
enum class SimdLevel { kGeneric = 0, kAvx2 = 1, kAvx512 = 2 };
SimdLevel simd_level();
SimdLevel best_simd_level();  // ignoring SPORE_CPU_ISA
const char* simd_level_name(SimdLevel level);
void set_simd_level(SimdLevel level);  // for tests; clamps to best_simd_level()

// The current level's entry of a kernel compiled per level (dwconv.h, softmax_line.h). A getter
// above the CPU's best level is never called: its code may not run here.
template <class Fn>
Fn level_function(Fn (*generic)(), Fn (*avx2)(), Fn (*avx512)()) {
  const Fn fns[3] = {generic(), best_simd_level() >= SimdLevel::kAvx2 ? avx2() : nullptr,
                     best_simd_level() >= SimdLevel::kAvx512 ? avx512() : nullptr};
  return fns[(int)simd_level()];
}

}  // namespace spore::cpu
