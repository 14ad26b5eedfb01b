// Helpers of the LLM block and quantized-product tests: run a body at every SIMD level the CPU
// has, and read the code of the spore::Error a call throws.
#pragma once
#include <gtest/gtest.h>

#include "../../src/backends/cpu/cpu_features.h"
#include "spore/error.h"

namespace spore::test {

// Runs `body` once per SIMD level the CPU has (generic first), restoring the level after.
template <typename F>
void at_every_level(F&& body) {
  using cpu::SimdLevel;
  const SimdLevel saved = cpu::simd_level();
  for (SimdLevel level : {SimdLevel::kGeneric, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
    if (level > cpu::best_simd_level()) continue;
    cpu::set_simd_level(level);
    SCOPED_TRACE(cpu::simd_level_name(level));
    body();
  }
  cpu::set_simd_level(saved);
}

// The code of the Error `fn` throws; kInternal when it throws none (no test expects that code).
template <typename F>
ErrorCode error_code_of(F&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.code();
  }
  return ErrorCode::kInternal;
}

}  // namespace spore::test
