// exp and SiLU in float32 as llama.cpp's CPU backend (ggml) computes them in its vectorised
// softmax and SiLU loops on AVX-512 machines (NOTE [LLM numerics]), one value at a time.
//
// The scheme (Arm's optimized-routines expf, as ggml adopted it): n = round(x * log2 e) by adding
// and subtracting 1.5 * 2^23, b = x - n * ln2 with ln2 in two parts (fused multiply-adds), e^b
// by a degree-5 polynomial evaluated as two halves in b and b^2, then scaled by 2^n; |n| > 192
// gives inf or +0. ggml scales with vscalefps, one correctly rounded product; here 2^n is applied
// as two normal powers of two, the first product exact, so the second rounds once to the same
// value, subnormal results included. Every step is a correctly rounded float32 operation, so
// any SIMD level (with or without FMA hardware; std::fma is exact either way) returns ggml's bits.
// Maximum error 2.2 ulp of float64's exp (measured over the float range; the elementwise test
// holds it to 2.5), about the Cephes exp's in elementwise_loops.inc.
//
// Written branch-free with bit-mask selects, as reduce_exp.h, so that GCC vectorises loops over it.
// static: each SIMD level's translation unit keeps its own copy (NOTE [SIMD levels]); an inline
// function with external linkage could be merged into one compiled for a higher level.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>

namespace spore::cpu {

static inline float ggml_expf(float x) {
  const float shifter = 0x1.8p23f;
  const float z = std::fma(x, 0x1.715476p+0f, shifter);
  const float n = z - shifter;
  const float b = std::fma(-n, 0x1.7f7d1cp-20f, std::fma(-n, 0x1.62e4p-1f, x));
  const float u = b * b;
  const float j = std::fma(std::fma(std::fma(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, std::fma(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)),
                           u, std::fma(0x1.ffffecp-1f, b, 1.0f));
  // n is an integer held in z's low mantissa bits (two's complement) while |n| < 2^22; clamped
  // to +-192 so that both halves are normal exponents (the out-of-range lanes are replaced below).
  int32_t ni = static_cast<int32_t>(std::bit_cast<uint32_t>(z) - std::bit_cast<uint32_t>(shifter));
  ni = ni > 192 ? 192 : ni;
  ni = ni < -192 ? -192 : ni;
  const int32_t n1 = ni >> 1, n2 = ni - n1;
  const float p1 = std::bit_cast<float>(static_cast<uint32_t>(n1 + 127) << 23);
  const float p2 = std::bit_cast<float>(static_cast<uint32_t>(n2 + 127) << 23);
  const uint32_t r = std::bit_cast<uint32_t>((j * p1) * p2);
  const uint32_t out = std::fabs(n) > 192.0f ? ~0u : 0u, pos = n > 0.0f ? ~0u : 0u, nan = x != x ? ~0u : 0u;
  const uint32_t big = (0x7f800000u & pos);  // inf for large n, +0 for very negative n
  const uint32_t y = (r & ~out) | (big & out);
  return std::bit_cast<float>((y & ~nan) | (std::bit_cast<uint32_t>(x) & nan));
}

// SiLU as ggml's vectorised loop: x / (1 + exp(0 - x)).
static inline float ggml_silu(float x) { return x / (1.0f + ggml_expf(0.0f - x)); }

}  // namespace spore::cpu
