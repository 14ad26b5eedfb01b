// Float16 / bfloat16 <-> float32 conversion of runs of values, for kernels compiled per SIMD
// level (NOTE [SIMD levels]): with F16C (the avx2 and avx512 levels) eight values per
// instruction, otherwise the scalar conversions of spore/half.h.
#pragma once
#include <cstdint>
#include <cstring>

#include "spore/half.h"
#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace spore::cpu {

inline void f16_to_f32(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(src + i))));
#endif
  for (; i < n; ++i) dst[i] = half_bits_to_float(src[i]);
}

inline void f32_to_f16(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128((__m128i*)(dst + i), _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
#endif
  for (; i < n; ++i) dst[i] = float_to_half_bits(src[i]);
}

// bfloat16 is the top half of a float32: widening is a shift (the compiler vectorises it).
inline void bf16_to_f32(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t b = (uint32_t)src[i] << 16;
    std::memcpy(dst + i, &b, 4);
  }
}

inline void f32_to_bf16(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = float_to_bf16_bits(src[i]);
}

}  // namespace spore::cpu
