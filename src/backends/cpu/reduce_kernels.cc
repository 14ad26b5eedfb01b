// CPU kernels of the reduce family: sum, mean, var, max, min, argmax, argmin, for every dtype the
// op accepts (NOTE [Reduction dtypes] in src/ops/reduce.cc). Loops and threading come from the
// plan in reduce_plan.h (NOTE [Deterministic reductions]); this file holds what each op does to
// one piece of data.
//
// Accumulation: floating sums (sum, mean, var) accumulate in float64 with 8 independent lanes
// per contiguous piece (vectorisable without reassociation flags), so float32 results are
// rounded once from a float64 sum; float64 sums carry about log2(n/8)*eps relative error.
// Integer sums accumulate in uint64 (wrapping like int64 two's complement, no UB).
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "../../ops/op_families.h"
#include "../../ops/reduce_attrs.h"
#include "cpu_kernels.h"
#include "reduce_plan.h"
#include "reduce_vec.h"

namespace spore::cpu {

namespace {

// Bool tensors are read as bytes (their storage), never as C++ bool.
template <class T>
using Store = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;
// Type values are compared in: float for the 16-bit floats, the storage type otherwise.
template <class T>
using Calc = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, Store<T>>;

template <class T>
constexpr bool kIsFloat = std::is_floating_point_v<Calc<T>>;

template <class T>
inline Calc<T> load(const Store<T>& v) {
  return static_cast<Calc<T>>(v);
}

template <class T>
inline Store<T> store_from(double v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return T((float)v);
  else return static_cast<Store<T>>(v);
}

template <class T>
inline Store<T> store_calc(Calc<T> v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return T(v);
  else return v;
}

template <class C>
inline bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>) return v != v;
  else return false;
}

// ---- sums ------------------------------------------------------------------------------------

// Sum of n elements at stride st, in float64 with 8 lanes combined as a fixed tree.
template <class T>
double sum_row(const T* p, int64_t n, int64_t st) {
  double a[8] = {};
  int64_t i = 0;
  if (st == 1) {
    for (; i + 8 <= n; i += 8)
      for (int l = 0; l < 8; ++l) a[l] += (double)load<T>(p[i + l]);
  } else {
    for (; i + 8 <= n; i += 8)
      for (int l = 0; l < 8; ++l) a[l] += (double)load<T>(p[(i + l) * st]);
  }
  for (int l = 0; i < n; ++i, ++l) a[l] += (double)load<T>(p[i * st]);
  return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

// Sum of squared deviations from m, same lane structure.
template <class T>
double sqdev_row(const T* p, int64_t n, int64_t st, double m) {
  double a[8] = {};
  int64_t i = 0;
  if (st == 1) {
    for (; i + 8 <= n; i += 8)
      for (int l = 0; l < 8; ++l) {
        double d = (double)load<T>(p[i + l]) - m;
        a[l] += d * d;
      }
  } else {
    for (; i + 8 <= n; i += 8)
      for (int l = 0; l < 8; ++l) {
        double d = (double)load<T>(p[(i + l) * st]) - m;
        a[l] += d * d;
      }
  }
  for (int l = 0; i < n; ++i, ++l) {
    double d = (double)load<T>(p[i * st]) - m;
    a[l] += d * d;
  }
  return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

// Floating sum; with a divisor it is the mean. Writes T, or float64 into `means` (var's pass 1).
template <class T>
struct FloatSum {
  using In = T;
  using State = double;
  T* out = nullptr;
  double* means = nullptr;
  double divisor = 1;
  State init() const { return 0; }
  void row(State& s, const T* p, int64_t n, int64_t st, int64_t, int64_t) const { s = sum_row(p, n, st); }
  void col(State* s, const T* p, int64_t w, int64_t, int64_t) const {
    for (int64_t j = 0; j < w; ++j) s[j] += (double)load<T>(p[j]);
  }
  void merge(State& a, const State& b) const { a += b; }
  void finish(const State& s, int64_t o) const {
    if (means) means[o] = s / divisor;
    else out[o] = store_from<T>(s / divisor);
  }
};

// var's pass 2: squared deviations from each output's float64 mean.
template <class T>
struct SqDev {
  using In = T;
  using State = double;
  T* out;
  const double* means;
  double denom;
  State init() const { return 0; }
  void row(State& s, const T* p, int64_t n, int64_t st, int64_t o, int64_t) const {
    s = sqdev_row(p, n, st, means[o]);
  }
  void col(State* s, const T* p, int64_t w, int64_t o0, int64_t) const {
    for (int64_t j = 0; j < w; ++j) {
      double d = (double)load<T>(p[j]) - means[o0 + j];
      s[j] += d * d;
    }
  }
  void merge(State& a, const State& b) const { a += b; }
  void finish(const State& s, int64_t o) const { out[o] = store_from<T>(s / denom); }
};

// Integer and bool sum into int64, wrapping.
template <class T>
struct IntSum {
  using In = Store<T>;
  using State = uint64_t;
  int64_t* out;
  State init() const { return 0; }
  void row(State& s, const In* p, int64_t n, int64_t st, int64_t, int64_t) const {
    uint64_t a = 0;
    if (st == 1)
      for (int64_t i = 0; i < n; ++i) a += (uint64_t)(int64_t)p[i];
    else
      for (int64_t i = 0; i < n; ++i) a += (uint64_t)(int64_t)p[i * st];
    s = a;
  }
  void col(State* s, const In* p, int64_t w, int64_t, int64_t) const {
    for (int64_t j = 0; j < w; ++j) s[j] += (uint64_t)(int64_t)p[j];
  }
  void merge(State& a, const State& b) const { a += b; }
  void finish(const State& s, int64_t o) const { out[o] = (int64_t)s; }
};

// ---- extremes --------------------------------------------------------------------------------

// `v` replaces `m` as the running extreme: strictly better, or a NaN (which then sticks).
template <bool kMax, class C>
inline bool better(C v, C m) {
  if constexpr (std::is_floating_point_v<C>) return (kMax ? v > m : v < m) || v != v;
  else return kMax ? v > m : v < m;
}

template <bool kMax, class C>
constexpr C worst() {
  if constexpr (std::is_floating_point_v<C>)
    return kMax ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
  else return kMax ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max();
}

// Extreme of a piece, NaN-propagating, 8 lanes for the contiguous case.
template <bool kMax, class T>
Calc<T> extreme_row(const Store<T>* p, int64_t n, int64_t st) {
  using C = Calc<T>;
  if constexpr (std::is_floating_point_v<Store<T>>)
    if (st == 1) return vec_extreme<kMax>(p, n);
  C m[8];
  for (auto& v : m) v = worst<kMax, C>();
  int64_t i = 0;
  if (st == 1) {
    for (; i + 8 <= n; i += 8)
      for (int l = 0; l < 8; ++l) {
        C v = load<T>(p[i + l]);
        m[l] = better<kMax>(v, m[l]) ? v : m[l];
      }
  }
  for (; i < n; ++i) {
    C v = load<T>(p[i * st]);
    m[0] = better<kMax>(v, m[0]) ? v : m[0];
  }
  for (int l = 1; l < 8; ++l) m[0] = better<kMax>(m[l], m[0]) ? m[l] : m[0];
  return m[0];
}

template <class T, bool kMax>
struct Extreme {
  using In = Store<T>;
  using State = Calc<T>;
  In* out;
  State init() const { return worst<kMax, State>(); }
  void row(State& s, const In* p, int64_t n, int64_t st, int64_t, int64_t) const {
    s = extreme_row<kMax, T>(p, n, st);
  }
  void col(State* s, const In* p, int64_t w, int64_t, int64_t) const {
    for (int64_t j = 0; j < w; ++j) {
      State v = load<T>(p[j]);
      s[j] = better<kMax>(v, s[j]) ? v : s[j];
    }
  }
  void merge(State& a, const State& b) const { a = better<kMax>(b, a) ? b : a; }
  // Exact: the extreme is one of the inputs, so converting back loses nothing.
  void finish(const State& s, int64_t o) const { out[o] = store_calc<T>(s); }
};

template <class C>
struct ArgState {
  C v{};
  int64_t i = -1;  // -1: nothing seen yet
};

template <class T, bool kMax>
struct ArgExtreme {
  using In = Store<T>;
  using C = Calc<T>;
  using State = ArgState<C>;
  int64_t* out;
  State init() const { return {}; }
  // Elements arrive in increasing index order, so "strictly better" keeps the first extreme.
  static void update(State& s, C v, int64_t idx) {
    if (s.i < 0 || (!is_nan(s.v) && better<kMax>(v, s.v))) s = {v, idx};
  }
  void row(State& s, const In* p, int64_t n, int64_t st, int64_t, int64_t idx0) const {
    if (st != 1) {
      for (int64_t k = 0; k < n; ++k) update(s, load<T>(p[k * st]), idx0 + k);
      return;
    }
    // Vectorised extreme first, then the first position holding it.
    C m = extreme_row<kMax, T>(p, n, 1);
    const bool nan = is_nan(m);
    for (int64_t k = 0; k < n; ++k) {
      C v = load<T>(p[k]);
      if (nan ? is_nan(v) : v == m) {
        s = {v, idx0 + k};
        return;
      }
    }
  }
  void col(State* s, const In* p, int64_t w, int64_t, int64_t idx) const {
    for (int64_t j = 0; j < w; ++j) update(s[j], load<T>(p[j]), idx);
  }
  void merge(State& a, const State& b) const {
    if (b.i < 0) return;
    if (a.i < 0 || (!is_nan(a.v) && better<kMax>(b.v, a.v))) a = b;
  }
  void finish(const State& s, int64_t o) const { out[o] = s.i; }
};

// ---- kernels ---------------------------------------------------------------------------------

std::vector<bool> reduced_axes(const KernelCall& c) {
  const Tensor& x = c.inputs[0];
  std::vector<bool> red((size_t)x.ndim(), false);
  for (int a : ops::reduce_axes(c.def, c.attrs.ints(0), x.ndim())) red[(size_t)a] = true;
  return red;
}

template <class T>
const Store<T>* input_ptr(const KernelCall& c) {
  return static_cast<const Store<T>*>(c.inputs[0].data_ptr());
}
template <class U>
U* output_ptr(const KernelCall& c) {
  return static_cast<U*>(c.outputs[0].data_ptr());
}

template <class T>
void sum_kernel(const KernelCall& c) {
  ReducePlan pl = make_reduce_plan(c.inputs[0], reduced_axes(c), false);
  if constexpr (kIsFloat<T>) {
    FloatSum<T> pol;
    pol.out = output_ptr<T>(c);
    run_reduce(pl, input_ptr<T>(c), pol);
  } else {
    run_reduce(pl, input_ptr<T>(c), IntSum<T>{output_ptr<int64_t>(c)});
  }
}

template <class T>
void mean_kernel(const KernelCall& c) {
  ReducePlan pl = make_reduce_plan(c.inputs[0], reduced_axes(c), false);
  FloatSum<T> pol;
  pol.out = output_ptr<T>(c);
  pol.divisor = (double)pl.count;  // 0 gives NaN: the mean of nothing
  run_reduce(pl, input_ptr<T>(c), pol);
}

// Two passes (mean, then squared deviations): exact-enough where the one-pass formula cancels.
template <class T>
void var_kernel(const KernelCall& c) {
  ReducePlan pl = make_reduce_plan(c.inputs[0], reduced_axes(c), false);
  std::vector<double> means((size_t)pl.num_out);
  FloatSum<T> pass1;
  pass1.means = means.data();
  pass1.divisor = (double)pl.count;
  run_reduce(pl, input_ptr<T>(c), pass1);
  const int64_t correction = c.attrs.i(1);
  const double denom = (double)std::max<int64_t>(0, pl.count - correction);
  run_reduce(pl, input_ptr<T>(c), SqDev<T>{output_ptr<T>(c), means.data(), denom});
}

template <class T, bool kMax>
void extreme_kernel(const KernelCall& c) {
  ReducePlan pl = make_reduce_plan(c.inputs[0], reduced_axes(c), false);
  run_reduce(pl, input_ptr<T>(c), Extreme<T, kMax>{output_ptr<Store<T>>(c)});
}

template <class T, bool kMax>
void arg_kernel(const KernelCall& c) {
  const Tensor& x = c.inputs[0];
  std::vector<bool> red((size_t)x.ndim(), false);
  const int64_t axis = c.attrs.i(0);
  if (axis == ops::kArgAxisAll) red.assign(red.size(), true);
  else if (x.ndim() > 0) red[(size_t)normalize_axis(axis, x.ndim(), c.def.name)] = true;
  ReducePlan pl = make_reduce_plan(x, red, true);
  run_reduce(pl, input_ptr<T>(c), ArgExtreme<T, kMax>{output_ptr<int64_t>(c)});
}

template <class T>
void register_all_dtypes_of() {
  constexpr DType d = dtype_v<T>;
  register_kernel(OpId::k_sum, kCpuBackend, d, &sum_kernel<T>);
  register_kernel(OpId::k_max, kCpuBackend, d, &extreme_kernel<T, true>);
  register_kernel(OpId::k_min, kCpuBackend, d, &extreme_kernel<T, false>);
  register_kernel(OpId::k_argmax, kCpuBackend, d, &arg_kernel<T, true>);
  register_kernel(OpId::k_argmin, kCpuBackend, d, &arg_kernel<T, false>);
  if constexpr (kIsFloat<T>) {
    register_kernel(OpId::k_mean, kCpuBackend, d, &mean_kernel<T>);
    register_kernel(OpId::k_var, kCpuBackend, d, &var_kernel<T>);
  }
}

}  // namespace

void register_reduce_kernels() {
  register_all_dtypes_of<bool>();
  register_all_dtypes_of<int8_t>();
  register_all_dtypes_of<uint8_t>();
  register_all_dtypes_of<int32_t>();
  register_all_dtypes_of<int64_t>();
  register_all_dtypes_of<Half>();
  register_all_dtypes_of<BFloat16>();
  register_all_dtypes_of<float>();
  register_all_dtypes_of<double>();
}

}  // namespace spore::cpu
