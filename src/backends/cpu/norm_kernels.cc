// CPU kernels of the norm family: softmax and log_softmax along one axis, for the floating dtypes.
//
// The input (any strides) is seen as [outer, L, inner] around the axis; the output is contiguous
// in that order. Each task gathers its data into a small float scratch (float64 for float64) so
// the arithmetic runs on contiguous memory whatever the layout and dtype:
//   * inner == 1 (the axis is the last non-trivial one): one line of L values per task;
//   * otherwise: an [L, w] block of w <= kNormCols neighbouring columns per task, so the inner
//     loops run across contiguous columns (softmax over axis 0 of a row-major matrix).
// Stable: exp(x - max); log_softmax is (x - max) - log(sum(exp(x - max))). Sums of the
// exponentials run in float64. A NaN anywhere on a line makes the whole line NaN, and a line that
// is all -inf gives NaN (there is no distribution to normalise), like PyTorch.
// Results do not depend on the thread count: each line is computed by one task in a fixed order.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "cpu_features.h"
#include "cpu_kernels.h"
#include "reduce_exp.h"
#include "reduce_plan.h"
#include "reduce_vec.h"
#include "softmax_line.h"

namespace spore::cpu {

ExpSumFn softmax_exp_sum() {
  return level_function(&softmax_exp_sum_generic, &softmax_exp_sum_avx2, &softmax_exp_sum_avx512);
}

SoftmaxLineFn softmax_line() {
  return level_function(&softmax_line_generic, &softmax_line_avx2, &softmax_line_avx512);
}

namespace {

constexpr int64_t kNormCols = 64;

template <class T>
using Calc = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class C>
inline C exp_c(C x) {
  if constexpr (std::is_same_v<C, float>) return exp_f32(x);
  else return std::exp(x);
}

template <class C>
inline C nan_max(C v, C m) {
  return (v > m || v != v) ? v : m;
}

template <class T>
inline T from_calc(Calc<T> v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return T(v);
  else return v;
}

// Softmax (or log_softmax) of s[k * w + j] for k < L, for each column j < w, in place.
// w == 1 is the line case. Every loop below is a plain map or runs across columns, so it
// vectorises; exp_f32 is inlined into them.
template <class C, bool kLog>
void softmax_block(C* __restrict s, int64_t L, int64_t w, C* __restrict mx, double* __restrict sum,
                   ExpSumFn exp_sum) {
  if (w == 1) {
    const C mv = vec_extreme<true>(s, L);
    double total = 0;
    if constexpr (kLog) {
      C e[256];
      for (int64_t k0 = 0; k0 < L; k0 += 256) {
        const int64_t n = std::min<int64_t>(256, L - k0);
        for (int64_t k = 0; k < n; ++k) e[k] = exp_c<C>(s[k0 + k] - mv);
        total += line_sum(e, n);
      }
    } else if constexpr (std::is_same_v<C, float>) {
      total = exp_sum(s, L, mv);  // the same sum at the current SIMD level's width
    } else {
      for (int64_t k = 0; k < L; ++k) s[k] = exp_c<C>(s[k] - mv);
      total = line_sum(s, L);
    }
    mx[0] = mv;
    sum[0] = total;
  } else {
    for (int64_t j = 0; j < w; ++j) {
      mx[j] = -std::numeric_limits<C>::infinity();
      sum[j] = 0;
    }
    for (int64_t k = 0; k < L; ++k)
      for (int64_t j = 0; j < w; ++j) mx[j] = nan_max(s[k * w + j], mx[j]);
    for (int64_t k = 0; k < L; ++k)
      for (int64_t j = 0; j < w; ++j) {
        C e = exp_c<C>(s[k * w + j] - mx[j]);
        if constexpr (!kLog) s[k * w + j] = e;
        sum[j] += (double)e;
      }
  }
  if constexpr (kLog) {
    C lse[kNormCols];
    for (int64_t j = 0; j < w; ++j) lse[j] = (C)std::log(sum[j]);
    if (w == 1) {
      const C m = mx[0], l = lse[0];
      for (int64_t k = 0; k < L; ++k) s[k] = (s[k] - m) - l;
    } else {
      for (int64_t k = 0; k < L; ++k)
        for (int64_t j = 0; j < w; ++j) s[k * w + j] = (s[k * w + j] - mx[j]) - lse[j];
    }
  } else {
    C inv[kNormCols];
    for (int64_t j = 0; j < w; ++j) inv[j] = (C)(1.0 / sum[j]);
    if (w == 1) {
      const C f = inv[0];
      for (int64_t k = 0; k < L; ++k) s[k] *= f;
    } else {
      for (int64_t k = 0; k < L; ++k)
        for (int64_t j = 0; j < w; ++j) s[k * w + j] *= inv[j];
    }
  }
}

template <class T, bool kLog>
void softmax_kernel(const KernelCall& c) {
  using C = Calc<T>;
  const Tensor& x = c.inputs[0];
  const Shape& shape = x.shape();
  const Shape& strides = x.strides();
  const int nd = shape.ndim();
  const int axis = nd == 0 ? -1 : normalize_axis(c.attrs.i(0), nd, c.def.name);
  Dims outer, inner;
  int64_t L = 1, sa = 0;
  for (int i = 0; i < nd; ++i) {
    if (i == axis) {
      L = shape[i];
      sa = strides[i];
    } else if (shape[i] != 1) {
      (i < axis ? outer : inner).push(shape[i], strides[i]);
    }
  }
  outer.coalesce();
  inner.coalesce();
  const int64_t n_outer = outer.numel(), n_inner = inner.numel();
  if (x.numel() == 0) return;
  const T* in = static_cast<const T*>(x.data_ptr());
  T* out = static_cast<T*>(c.outputs[0].data_ptr());

  const ExpSumFn exp_sum = softmax_exp_sum();  // once per call, not per line
  const SoftmaxLineFn whole_line = softmax_line();
  const int64_t w_max = std::min(n_inner, kNormCols);
  const int64_t col_tasks = (n_inner + w_max - 1) / w_max;
  const int64_t grain = std::max<int64_t>(1, (1 << 14) / (L * w_max));
  parallel_for(n_outer * col_tasks, grain, [&](int64_t b, int64_t e) {
    std::vector<C> scratch((size_t)(L * w_max));
    C mx[kNormCols];
    double sum[kNormCols];
    int64_t coff[kNormCols];
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / col_tasks, j0 = (t % col_tasks) * w_max;
      const int64_t w = std::min(w_max, n_inner - j0);
      const T* base = in + Odometer(outer, o).off;
      T* dst = out + o * L * n_inner + j0;
      Odometer col(inner, j0);
      if (w == 1) {
        if constexpr (std::is_same_v<T, float> && !kLog) {
          if (sa == 1 && base + col.off != dst) {  // contiguous and not in place: one call, no copy
            whole_line(base + col.off, dst, L);
            continue;
          }
        }
        // A line: float32/float64 compute in the output row itself, other dtypes in scratch.
        C* buf = std::is_same_v<T, C> ? reinterpret_cast<C*>(dst) : scratch.data();
        const T* src = base + col.off;
        if (sa == 1)
          for (int64_t k = 0; k < L; ++k) buf[k] = (C)src[k];
        else
          for (int64_t k = 0; k < L; ++k) buf[k] = (C)src[k * sa];
        softmax_block<C, kLog>(buf, L, 1, mx, sum, exp_sum);
        if constexpr (!std::is_same_v<T, C>)
          for (int64_t k = 0; k < L; ++k) dst[k] = from_calc<T>(buf[k]);
        continue;
      }
      // Gather the [L, w] block into scratch.
      for (int64_t j = 0; j < w; ++j, col.next()) coff[j] = col.off;
      for (int64_t k = 0; k < L; ++k)
        for (int64_t j = 0; j < w; ++j) scratch[(size_t)(k * w + j)] = (C)base[k * sa + coff[j]];
      softmax_block<C, kLog>(scratch.data(), L, w, mx, sum, exp_sum);
      for (int64_t k = 0; k < L; ++k)
        for (int64_t j = 0; j < w; ++j) dst[k * n_inner + j] = from_calc<T>(scratch[(size_t)(k * w + j)]);
    }
  });
}

template <class T>
void register_for() {
  register_kernel(OpId::k_softmax, kCpuBackend, dtype_v<T>, &softmax_kernel<T, false>);
  register_kernel(OpId::k_log_softmax, kCpuBackend, dtype_v<T>, &softmax_kernel<T, true>);
}

}  // namespace

void register_norm_kernels() {
  register_for<Half>();
  register_for<BFloat16>();
  register_for<float>();
  register_for<double>();
}

}  // namespace spore::cpu
