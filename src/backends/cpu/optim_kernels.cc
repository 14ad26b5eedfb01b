// CPU kernels of the fused optimizer updates (NOTE [In-place update ops] in src/ops/optim.cc).
// Parameters of any floating dtype; state in float32 (float64 for float64 parameters); the
// arithmetic in the state's precision, the parameter rounded once per step.
#include <cmath>
#include <type_traits>

#include "core/thread_pool.h"
#include "cpu_kernels.h"

namespace spore::cpu {

namespace {

// Reads an element in the state's precision (16-bit types convert through float).
template <typename S, typename P>
inline S load(P x) {
  if constexpr (std::is_same_v<P, Half> || std::is_same_v<P, BFloat16>) return (S)(float)x;
  else return (S)x;
}
template <typename P, typename S>
inline P store(S x) {
  if constexpr (std::is_same_v<P, Half> || std::is_same_v<P, BFloat16>) return P((float)x);
  else return (P)x;
}

template <typename P, typename S>
void sgd_kernel(const KernelCall& c) {
  P* p = c.inputs[0].data<P>();
  const P* g = c.inputs[1].data<P>();
  S* buf = c.inputs[2].data<S>();
  const S lr = (S)c.attrs.f(0), mom = (S)c.attrs.f(1), damp = (S)c.attrs.f(2), wd = (S)c.attrs.f(3);
  const bool nesterov = c.attrs.b(4), first = c.attrs.b(5);
  parallel_for(c.inputs[0].numel(), 1 << 15, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      S pv = load<S>(p[i]);
      S gv = load<S>(g[i]) + wd * pv;
      if (mom != 0) {
        S bv = first ? gv : mom * buf[i] + (1 - damp) * gv;
        buf[i] = bv;
        gv = nesterov ? gv + mom * bv : bv;
      }
      p[i] = store<P>(pv - lr * gv);
    }
  });
}

template <typename P, typename S>
void adam_kernel(const KernelCall& c) {
  P* p = c.inputs[0].data<P>();
  const P* g = c.inputs[1].data<P>();
  S* m = c.inputs[2].data<S>();
  S* v = c.inputs[3].data<S>();
  const double lr = c.attrs.f(0), b1 = c.attrs.f(1), b2 = c.attrs.f(2), eps = c.attrs.f(3), wd = c.attrs.f(4);
  const int64_t step = c.attrs.i(5);
  const bool decoupled = c.attrs.b(6);
  // Bias corrections folded into the step size and epsilon, as PyTorch does.
  const S bc1 = (S)(1 - std::pow(b1, (double)step));
  const S bc2_sqrt = (S)std::sqrt(1 - std::pow(b2, (double)step));
  const S step_size = (S)lr / bc1;
  const S sb1 = (S)b1, sb2 = (S)b2, seps = (S)eps, swd = (S)wd, decay = (S)(1 - lr * wd);
  parallel_for(c.inputs[0].numel(), 1 << 14, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      S pv = load<S>(p[i]);
      S gv = load<S>(g[i]);
      if (decoupled) pv *= decay;
      else gv += swd * pv;
      S mv = sb1 * m[i] + (1 - sb1) * gv;
      S vv = sb2 * v[i] + (1 - sb2) * gv * gv;
      m[i] = mv;
      v[i] = vv;
      S denom = std::sqrt(vv) / bc2_sqrt + seps;
      p[i] = store<P>(pv - step_size * mv / denom);
    }
  });
}

// float64 parameters need float64 arithmetic; P(double) must exist for the 16-bit types too.
template <typename P>
struct StateOf {
  using type = float;
};
template <>
struct StateOf<double> {
  using type = double;
};

template <typename P>
void reg() {
  using S = typename StateOf<P>::type;
  register_kernel(OpId::k_sgd_update, kCpuBackend, dtype_v<P>, &sgd_kernel<P, S>);
  register_kernel(OpId::k_adam_update, kCpuBackend, dtype_v<P>, &adam_kernel<P, S>);
}

}  // namespace

void register_optim_kernels() {
  reg<float>();
  reg<double>();
  reg<Half>();
  reg<BFloat16>();
}

}  // namespace spore::cpu
