// Internal: how the creation ops turn float64 attribute values into elements of any dtype,
// shared by their inference (which rejects values that cannot be represented) and the CPU
// kernels (which then convert without undefined behaviour).
#pragma once
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "spore/dtype.h"

namespace spore::ops {

// double -> float without the undefined behaviour of converting a finite value beyond FLT_MAX.
inline float saturate_float(double v) {
  if (v > (double)FLT_MAX) return v < INFINITY ? INFINITY : (float)v;
  if (v < -(double)FLT_MAX) return v > -INFINITY ? -INFINITY : (float)v;
  return (float)v;
}

// True when v truncates to a value of the integer type T.
template <typename T>
bool fits_integer(double v) {
  if (!std::isfinite(v)) return false;
  const double t = std::trunc(v);
  if constexpr (std::is_same_v<T, int64_t>) return t >= -0x1p63 && t < 0x1p63;
  else return t >= (double)std::numeric_limits<T>::min() && t <= (double)std::numeric_limits<T>::max();
}

// Converts like cast(): bool is v != 0, integers truncate toward zero (the caller has checked
// fits_integer), floats round to nearest and overflow to infinity.
template <typename T>
T from_double(double v) {
  if constexpr (std::is_same_v<T, bool>) return v != 0;
  else if constexpr (std::is_integral_v<T>) return (T)v;
  else if constexpr (std::is_same_v<T, double>) return v;
  else if constexpr (std::is_same_v<T, float>) return saturate_float(v);
  else return T(saturate_float(v));  // Half, BFloat16
}

// The next representable value of a floating dtype below / above t.
template <typename T>
T next_down(T t) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    return std::nextafter(t, -std::numeric_limits<T>::infinity());
  } else {  // Half / BFloat16: sign-magnitude bits
    const uint16_t b = t.bits;
    if ((b & 0x7fffu) == 0) return T::from_bits(0x8001u);  // +-0 -> smallest negative subnormal
    return T::from_bits((b & 0x8000u) ? (uint16_t)(b + 1) : (uint16_t)(b - 1));
  }
}
template <typename T>
T next_up(T t) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    return std::nextafter(t, std::numeric_limits<T>::infinity());
  } else {
    const uint16_t b = t.bits;
    if ((b & 0x7fffu) == 0) return T::from_bits(0x0001u);
    return T::from_bits((b & 0x8000u) ? (uint16_t)(b - 1) : (uint16_t)(b + 1));
  }
}

// The smallest value of floating dtype T that is >= low and the largest that is < high: every
// uniform sample is clamped into [lo, hi], so rounding into T can never produce `high` (or fall
// below `low`). lo > hi means T has no value in [low, high).
template <typename T>
void uniform_bounds(double low, double high, T& lo, T& hi) {
  lo = from_double<T>(low);
  if ((double)lo < low) lo = next_up(lo);
  hi = from_double<T>(high);
  if ((double)hi >= high) hi = next_down(hi);
}

}  // namespace spore::ops
