// A float32 exp the compiler can vectorise (std::exp is a library call it cannot), for softmax
// and log_softmax. Cephes' expf scheme: x = n*ln2 + r with |r| <= ln2/2, exp(r) by a degree-7
// polynomial, 2^n by building the exponent bits. Relative error about 2 ulp over the range;
// inputs below -87.3 give 0 (exp there is below float's smallest normal), above 88.3 inf,
// NaN stays NaN.
#pragma once
#include <bit>
#include <cstdint>

namespace spore::cpu {

inline float exp_f32(float x) {
  const float lo = -87.3f, hi = 88.3f;
  // Selects are bit masks: a float select is compiled as a branch where GCC will not speculate
  // float arithmetic (-ftrapping-math), which stops vectorisation. NaN sets no mask.
  const uint32_t big = x > hi ? ~0u : 0u, small = x < lo ? ~0u : 0u;
  const uint32_t xb = std::bit_cast<uint32_t>(x);
  const float xc = std::bit_cast<float>((xb & ~(big | small)) | (std::bit_cast<uint32_t>(hi) & big) |
                                        (std::bit_cast<uint32_t>(lo) & small));
  // n = round(x / ln2), as a float, by the 1.5 * 2^23 trick (no float-to-int conversion).
  const float shifter = 12582912.0f;
  float t = xc * 1.44269504088896341f + shifter;
  float n = t - shifter;
  float r = xc - n * 0.693359375f;      // ln2 split in two for an exact first step
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // 2^n: n + 127 into the exponent field. t's low mantissa bits hold n (two's complement).
  uint32_t ni = std::bit_cast<uint32_t>(t) - std::bit_cast<uint32_t>(shifter);
  float scale = std::bit_cast<float>((ni + 127u) << 23);
  uint32_t y = std::bit_cast<uint32_t>(p * scale);
  y = (y & ~big) | (0x7f800000u & big);  // inf
  return std::bit_cast<float>(y & ~small);  // +0
}

}  // namespace spore::cpu
