// CPU kernels of the creation family: fill, arange, random_uniform, random_normal.
// Attribute values were validated by inference (src/ops/creation.cc), so conversions here are
// defined for every value that reaches them.
#include <cmath>

#include "thread_pool.h"
#include "cpu_kernels.h"
#include "creation_philox.h"
#include "ops/creation_values.h"

namespace spore::cpu {

namespace {

using ops::from_double;

constexpr int64_t kFillGrain = 1 << 16;
constexpr int64_t kRandomGrain = 1 << 13;  // Philox blocks per chunk
constexpr double kTwoPi = 6.283185307179586476925286766559;

template <typename T>
void fill_kernel(const KernelCall& call) {
  const Tensor& out = call.outputs[0];
  T* p = static_cast<T*>(out.data_ptr());
  const T v = from_double<T>(call.attrs.f(1));
  parallel_for(out.numel(), kFillGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) p[i] = v;
  });
}

template <typename T>
void arange_kernel(const KernelCall& call) {
  const Tensor& out = call.outputs[0];
  T* p = static_cast<T*>(out.data_ptr());
  const double start = call.attrs.f(0), step = call.attrs.f(2);
  parallel_for(out.numel(), kFillGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) p[i] = from_double<T>(start + (double)i * step);
  });
}

// NOTE [Random numbers] layout: 32-bit-word dtypes (float16, bfloat16, float32) take one word per
// element, four elements per Philox block; float64 takes two words (53 bits) per element, two
// elements per block. Element i's words therefore come from block i / 4 (or i / 2) only.
template <typename T>
constexpr int64_t per_block() {
  return std::is_same_v<T, double> ? 2 : 4;
}

inline double u32_unit(uint32_t w) { return (double)w * 0x1p-32; }  // [0, 1)
inline double u53_unit(uint32_t hi, uint32_t lo) {                  // [0, 1)
  return (double)((((uint64_t)hi << 32) | lo) >> 11) * 0x1p-53;
}

// Runs fn(element, words) for every element, block by block, over the pool.
template <typename T, typename Fn>
void for_each_block(const Tensor& out, uint64_t seed, Fn&& fn) {
  const int64_t n = out.numel(), per = per_block<T>();
  const int64_t blocks = (n + per - 1) / per;
  parallel_for(blocks, kRandomGrain, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) fn(b * per, std::min(per, n - b * per), philox_block(seed, (uint64_t)b));
  });
}

template <typename T>
void uniform_kernel(const KernelCall& call) {
  const Tensor& out = call.outputs[0];
  T* p = static_cast<T*>(out.data_ptr());
  const double low = call.attrs.f(2), high = call.attrs.f(3), width = high - low;
  T lo, hi;
  ops::uniform_bounds(low, high, lo, hi);
  const double lo_d = (double)lo, hi_d = (double)hi;
  for_each_block<T>(out, (uint64_t)call.attrs.i(1), [&](int64_t first, int64_t count, const PhiloxBlock& w) {
    for (int64_t j = 0; j < count; ++j) {
      double u;
      if constexpr (std::is_same_v<T, double>) u = u53_unit(w[2 * j], w[2 * j + 1]);
      else u = u32_unit(w[j]);
      T v = from_double<T>(low + width * u);
      // Rounding (of low + width * u, or into T) may reach high: clamp to the last value below it.
      if ((double)v > hi_d) v = hi;
      else if ((double)v < lo_d) v = lo;
      p[first + j] = v;
    }
  });
}

template <typename T>
void normal_kernel(const KernelCall& call) {
  const Tensor& out = call.outputs[0];
  T* p = static_cast<T*>(out.data_ptr());
  const double mean = call.attrs.f(2), stddev = call.attrs.f(3);
  for_each_block<T>(out, (uint64_t)call.attrs.i(1), [&](int64_t first, int64_t count, const PhiloxBlock& w) {
    double z[4] = {};
    // Box-Muller: u1 in (0, 1] so that log(u1) is finite; each pair of uniforms gives two normals.
    if constexpr (std::is_same_v<T, double>) {
      const double u1 = 1.0 - u53_unit(w[0], w[1]), u2 = u53_unit(w[2], w[3]);
      const double r = std::sqrt(-2.0 * std::log(u1));
      z[0] = r * std::cos(kTwoPi * u2);
      z[1] = r * std::sin(kTwoPi * u2);
    } else {
      for (int k = 0; k < 2; ++k) {
        const double u1 = 1.0 - u32_unit(w[2 * k]), u2 = u32_unit(w[2 * k + 1]);
        const double r = std::sqrt(-2.0 * std::log(u1));
        z[2 * k] = r * std::cos(kTwoPi * u2);
        z[2 * k + 1] = r * std::sin(kTwoPi * u2);
      }
    }
    for (int64_t j = 0; j < count; ++j) p[first + j] = from_double<T>(mean + stddev * z[j]);
  });
}

template <typename T>
void register_floating_random() {
  register_kernel(OpId::k_random_uniform, kCpuBackend, dtype_v<T>, &uniform_kernel<T>);
  register_kernel(OpId::k_random_normal, kCpuBackend, dtype_v<T>, &normal_kernel<T>);
}

}  // namespace

void register_creation_kernels() {
  for (DType t : kAllDTypes) {
    visit_dtype(t, [&](auto tag) {
      using T = decltype(tag);
      register_kernel(OpId::k_fill, kCpuBackend, t, &fill_kernel<T>);
      if constexpr (!std::is_same_v<T, bool>) register_kernel(OpId::k_arange, kCpuBackend, t, &arange_kernel<T>);
    });
  }
  register_floating_random<Half>();
  register_floating_random<BFloat16>();
  register_floating_random<float>();
  register_floating_random<double>();
}

}  // namespace spore::cpu
