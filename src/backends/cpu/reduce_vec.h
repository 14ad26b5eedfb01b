// Explicit 16-byte vectors (GCC/Clang vector extensions) for the NaN-propagating max/min of a
// contiguous float or double row: the loop vectoriser will not turn that select into a
// reduction by itself (it would need -ffast-math), so these spell out the lanes.
#pragma once
#include <cstdint>
#include <cstring>
#include <limits>

namespace spore::cpu {

template <class C>
struct Vec16;
template <>
struct Vec16<float> {
  typedef float type __attribute__((vector_size(16)));
};
template <>
struct Vec16<double> {
  typedef double type __attribute__((vector_size(16)));
};

// `v` replaces `m` when strictly better or NaN (a NaN, once in, stays).
template <bool kMax, class C>
inline C nan_pick(C v, C m) {
  return ((kMax ? v > m : v < m) || v != v) ? v : m;
}

// NaN-propagating max (kMax) or min of s[0..n), lanes combined in a fixed order.
template <bool kMax, class C>
C vec_extreme(const C* s, int64_t n) {
  using V = typename Vec16<C>::type;
  constexpr int64_t N = 16 / sizeof(C);
  constexpr C kWorst = kMax ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
  V m0, m1;
  for (int64_t l = 0; l < N; ++l) m0[l] = m1[l] = kWorst;
  int64_t k = 0;
  for (; k + 2 * N <= n; k += 2 * N) {
    V a, b;
    std::memcpy(&a, s + k, sizeof(V));
    std::memcpy(&b, s + k + N, sizeof(V));
    if constexpr (kMax) {
      m0 = ((a > m0) | (a != a)) ? a : m0;
      m1 = ((b > m1) | (b != b)) ? b : m1;
    } else {
      m0 = ((a < m0) | (a != a)) ? a : m0;
      m1 = ((b < m1) | (b != b)) ? b : m1;
    }
  }
  C m = kWorst;
  for (int64_t l = 0; l < N; ++l) m = nan_pick<kMax>(m1[l], nan_pick<kMax>(m0[l], m));
  for (; k < n; ++k) m = nan_pick<kMax>(s[k], m);
  return m;
}

}  // namespace spore::cpu
