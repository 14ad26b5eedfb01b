#include "cpu_features.h"

#include <cpuid.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace spore::cpu {

namespace {
uint64_t xgetbv0() {
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return ((uint64_t)edx << 32) | eax;
}

CpuFeatures detect() {
  CpuFeatures f;
  unsigned a, b, c, d;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return f;
  unsigned max_leaf = a;
  char vendor[13] = {};
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  f.vendor = vendor;
  __get_cpuid(1, &a, &b, &c, &d);
  f.sse42 = c >> 20 & 1;
  f.fma = c >> 12 & 1;
  f.f16c = c >> 29 & 1;
  bool osxsave = c >> 27 & 1;
  f.avx = c >> 28 & 1;
  if (osxsave) {
    uint64_t xcr0 = xgetbv0();
    f.os_avx = (xcr0 & 0x6) == 0x6;
    f.os_avx512 = (xcr0 & 0xe6) == 0xe6;
  }
  if (max_leaf >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    f.avx2 = b >> 5 & 1;
    f.avx512f = b >> 16 & 1;
    f.avx512dq = b >> 17 & 1;
    f.avx512bw = b >> 30 & 1;
    f.avx512vl = b >> 31 & 1;
    f.avx512vnni = c >> 11 & 1;
    f.avx512fp16 = d >> 23 & 1;
    f.amx_tile = d >> 24 & 1;
    __cpuid_count(7, 1, a, b, c, d);
    f.avx512bf16 = a >> 5 & 1;
  }
  unsigned ext = __get_cpuid_max(0x80000000, nullptr);
  if (ext >= 0x80000004) {
    char brand[49] = {};
    for (unsigned i = 0; i < 3; ++i) {
      __get_cpuid(0x80000002 + i, &a, &b, &c, &d);
      std::memcpy(brand + 16 * i, &a, 4);
      std::memcpy(brand + 16 * i + 4, &b, 4);
      std::memcpy(brand + 16 * i + 8, &c, 4);
      std::memcpy(brand + 16 * i + 12, &d, 4);
    }
    std::string_view s(brand);
    while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    f.model = std::string(s);
  }
  if (!f.os_avx) f.avx = f.avx2 = f.fma = f.f16c = false;
  if (!f.os_avx512) f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = f.avx512bf16 = f.avx512fp16 = f.avx512vnni = false;
  return f;
}

SimdLevel level_from_env(SimdLevel best) {
  const char* env = std::getenv("SPORE_CPU_ISA");
  if (!env) return best;
  std::string_view v(env);
  SimdLevel want = v == "generic" ? SimdLevel::kGeneric : v == "avx2" ? SimdLevel::kAvx2 : best;
  return want < best ? want : best;
}

std::atomic<int>& level_slot() {
  static std::atomic<int> level{(int)level_from_env(best_simd_level())};
  return level;
}
}  // namespace

std::vector<std::string> CpuFeatures::names() const {
  std::vector<std::string> out;
  auto add = [&](bool on, const char* n) {
    if (on) out.emplace_back(n);
  };
  add(sse42, "sse4_2"); add(avx, "avx"); add(avx2, "avx2"); add(fma, "fma"); add(f16c, "f16c");
  add(avx512f, "avx512f"); add(avx512bw, "avx512bw"); add(avx512vl, "avx512vl");
  add(avx512dq, "avx512dq"); add(avx512bf16, "avx512_bf16"); add(avx512fp16, "avx512_fp16");
  add(avx512vnni, "avx512_vnni"); add(amx_tile, "amx_tile");
  return out;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

SimdLevel best_simd_level() {
  const CpuFeatures& f = cpu_features();
  if (f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.fma && f.f16c) return SimdLevel::kAvx512;
  if (f.avx2 && f.fma && f.f16c) return SimdLevel::kAvx2;
  return SimdLevel::kGeneric;
}

SimdLevel simd_level() { return (SimdLevel)level_slot().load(std::memory_order_relaxed); }

void set_simd_level(SimdLevel level) {
  SimdLevel best = best_simd_level();
  level_slot().store((int)(level < best ? level : best));
}

const char* simd_level_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::kGeneric: return "generic";
    case SimdLevel::kAvx2: return "avx2";
    case SimdLevel::kAvx512: return "avx512";
  }
  return "?";
}

}  // namespace spore::cpu
