// CPU kernels of the pooling ops (NOTE [Pooling semantics] in src/ops/conv.cc): max_pool2d,
// avg_pool2d, adaptive_avg_pool2d and their gradients, for the floating dtypes.
//
// Every pooling window here is separable: the rows of window (i, j) depend on i only and its
// columns on j only. So each op reduces to per-axis [start, end) ranges, already clipped to the
// input (padding cells never take part: max pooling's -inf padding can never win, and average
// pooling divides by the real cells only), and one set of loops serves max/avg pooling and
// adaptive pooling alike.
// Work is split over the N*C planes; each plane is read into a small float (float64 for
// float64) scratch, so strided inputs and 16-bit dtypes cost one pass, and all arithmetic of a
// plane runs in one task in a fixed order: results do not depend on the thread count.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "conv_internal.h"
#include "thread_pool.h"
#include "cpu_kernels.h"
#include "spore/half.h"

namespace spore::cpu {

namespace {

template <class T>
using Calc = std::conditional_t<std::is_same_v<T, double>, double, float>;

struct Windows {
  int64_t planes = 0, h = 0, w = 0, ho = 0, wo = 0;
  std::vector<int64_t> hs, he, ws, we;  // rows [hs[i], he[i]) and columns [ws[j], we[j])
  int64_t kw = 0, sw = 0, pw = 0;       // pooling's column kernel, stride and padding (0: adaptive)
};

void pool_axis(int64_t in, int64_t out, int64_t k, int64_t s, int64_t p, std::vector<int64_t>& lo,
               std::vector<int64_t>& hi) {
  for (int64_t i = 0; i < out; ++i) {
    const int64_t start = i * s - p;
    lo.push_back(std::max<int64_t>(start, 0));
    hi.push_back(std::min(start + k, in));
  }
}

void adaptive_axis(int64_t in, int64_t out, std::vector<int64_t>& lo, std::vector<int64_t>& hi) {
  for (int64_t i = 0; i < out; ++i) {
    lo.push_back(ops::adaptive_start(i, in, out));
    hi.push_back(ops::adaptive_end(i, in, out));
  }
}

Windows pool_windows(const Shape& x, const Attrs& attrs) {
  const ops::PoolGeometry g = ops::pool_geometry(x, attrs);
  Windows win{g.n * g.c, g.h, g.w, g.ho, g.wo, {}, {}, {}, {}};
  pool_axis(g.h, g.ho, g.kh, g.sh, g.ph, win.hs, win.he);
  pool_axis(g.w, g.wo, g.kw, g.sw, g.pw, win.ws, win.we);
  win.kw = g.kw, win.sw = g.sw, win.pw = g.pw;
  return win;
}

Windows adaptive_windows(const Shape& x, int64_t ho, int64_t wo) {
  Windows win{x[0] * x[1], x[2], x[3], ho, wo, {}, {}, {}, {}};
  adaptive_axis(x[2], ho, win.hs, win.he);
  adaptive_axis(x[3], wo, win.ws, win.we);
  return win;
}

// Reads plane q of a 4-D tensor (any strides) into contiguous calc-type memory.
template <class T>
void load_plane(const Tensor& t, int64_t q, Calc<T>* out) {
  const Shape &s = t.shape(), &st = t.strides();
  const T* base = static_cast<const T*>(t.data_ptr()) + (q / s[1]) * st[0] + (q % s[1]) * st[1];
  for (int64_t h = 0; h < s[2]; ++h)
    for (int64_t w = 0; w < s[3]; ++w) *out++ = (Calc<T>)base[h * st[2] + w * st[3]];
}

template <class T>
void store(T* out, const Calc<T>* in, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = T(in[i]);
}

// Runs fn(q, scratch_in, scratch_out) for every plane q; scratches are per task.
template <class T, class Fn>
void for_planes(const Windows& win, int64_t in_size, int64_t out_size, Fn fn) {
  const int64_t work = std::max<int64_t>(1, win.h * win.w + win.ho * win.wo);
  parallel_for(win.planes, std::max<int64_t>(1, 16384 / work), [&](int64_t b, int64_t e) {
    std::vector<Calc<T>> in((size_t)in_size), out((size_t)out_size);
    for (int64_t q = b; q < e; ++q) fn(q, in.data(), out.data());
  });
}

// The flat index of the first maximum of window (i, j) of a plane; a NaN counts as the maximum
// and the first NaN wins. Windows are never empty (the op's output extents guarantee it).
template <class C>
inline int64_t argmax_window(const Windows& win, const C* x, int64_t i, int64_t j) {
  int64_t best = win.hs[i] * win.w + win.ws[j];
  C m = x[best];
  for (int64_t h = win.hs[i]; h < win.he[i]; ++h)
    for (int64_t w = win.ws[j]; w < win.we[j]; ++w) {
      const C v = x[h * win.w + w];
      if (v > m || (v != v && m == m)) {
        m = v;
        best = h * win.w + w;
      }
    }
  return best;
}

// Every window is the 2x2 block at (2i, 2j): the common stride-2 pooling of CNNs, for which
// the generic window walk costs several times the arithmetic.
bool is_2x2_blocks(const Windows& win) {
  auto regular = [](const std::vector<int64_t>& lo, const std::vector<int64_t>& hi) {
    for (size_t i = 0; i < lo.size(); ++i)
      if (lo[i] != 2 * (int64_t)i || hi[i] != 2 * (int64_t)i + 2) return false;
    return true;
  };
  return regular(win.hs, win.he) && regular(win.ws, win.we);
}

// argmax_window for a 2x2 block at row-major offset `at` of a plane `w` wide: the same order and
// the same NaN rule, unrolled.
template <class C>
inline int64_t argmax_2x2(const C* x, int64_t at, int64_t w) {
  const int64_t cand[4] = {at, at + 1, at + w, at + w + 1};
  int64_t best = cand[0];
  C m = x[best];
  for (int c = 1; c < 4; ++c) {
    const C v = x[cand[c]];
    if (v > m || (v != v && m == m)) {
      m = v;
      best = cand[c];
    }
  }
  return best;
}

// argmax_window's comparison: v replaces the maximum so far when larger, or the first NaN.
template <class C>
inline C first_max(C m, C v) {
  return v > m || (v != v && m == m) ? v : m;
}

// The value argmax_window finds, taken separably: each input row's maximum over every window's
// columns, then each window's maximum over its rows, the second pass vectorised across columns.
// The first maximum in row-major order is, among the rows holding the largest value, the first
// row's first one: the same element wins, signed zeros and the first NaN included. PP-HGNetV2's
// 2x2 stride-1 pooling (PP-OCRv6's stem) took 10 of 86 ms through the window walk.
template <class C>
void max_separable(const Windows& win, const C* xs, C* rows, C* ys) {
  // Stride 1: the columns whose window lies inside the row take their maxima tap by tap, one
  // vectorised loop per tap; the others (and every column at other strides) window by window.
  int64_t j0 = 0, j1 = 0;
  if (win.sw == 1) {
    j0 = std::min(win.wo, win.pw);
    j1 = std::max(j0, std::min(win.wo, win.w - win.kw + win.pw + 1));
  }
  for (int64_t h = 0; h < win.h; ++h) {
    const C* __restrict r = xs + h * win.w;
    C* __restrict o = rows + h * win.wo;
    auto window = [&](int64_t j) {
      C m = r[win.ws[(size_t)j]];
      for (int64_t c = win.ws[(size_t)j] + 1; c < win.we[(size_t)j]; ++c) m = first_max(m, r[c]);
      o[j] = m;
    };
    for (int64_t j = 0; j < j0; ++j) window(j);
    for (int64_t j = j0; j < j1; ++j) o[j] = r[j - win.pw];
    for (int64_t t = 1; t < win.kw && j1 > j0; ++t)
      for (int64_t j = j0; j < j1; ++j) o[j] = first_max(o[j], r[j - win.pw + t]);
    for (int64_t j = std::max(j0, j1); j < win.wo; ++j) window(j);
  }
  for (int64_t i = 0; i < win.ho; ++i) {
    C* __restrict o = ys + i * win.wo;
    std::copy(rows + win.hs[(size_t)i] * win.wo, rows + (win.hs[(size_t)i] + 1) * win.wo, o);
    for (int64_t h = win.hs[(size_t)i] + 1; h < win.he[(size_t)i]; ++h) {
      const C* __restrict r = rows + h * win.wo;
      for (int64_t j = 0; j < win.wo; ++j) o[j] = first_max(o[j], r[j]);
    }
  }
}

template <class T, bool kMax>
void pool_forward(const Tensor& x, const Windows& win, const Tensor& y) {
  T* out = static_cast<T*>(y.data_ptr());
  const int64_t hw = win.h * win.w, ohw = win.ho * win.wo;
  const bool blocks = kMax && is_2x2_blocks(win);
  for_planes<T>(win, hw, ohw, [&](int64_t q, Calc<T>* xs, Calc<T>* ys) {
    load_plane<T>(x, q, xs);
    if (kMax && blocks) {
      for (int64_t i = 0; i < win.ho; ++i)
        for (int64_t j = 0; j < win.wo; ++j) ys[i * win.wo + j] = xs[argmax_2x2(xs, 2 * i * win.w + 2 * j, win.w)];
      store(out + q * ohw, ys, ohw);
      return;
    }
    if constexpr (kMax) {
      thread_local std::vector<Calc<T>> rows;
      rows.resize((size_t)(win.h * win.wo));
      max_separable(win, xs, rows.data(), ys);
      store(out + q * ohw, ys, ohw);
      return;
    }
    for (int64_t i = 0; i < win.ho; ++i)
      for (int64_t j = 0; j < win.wo; ++j) {
        Calc<T> acc = 0;
        for (int64_t h = win.hs[i]; h < win.he[i]; ++h)
          for (int64_t w = win.ws[j]; w < win.we[j]; ++w) acc += xs[h * win.w + w];
        ys[i * win.wo + j] = acc / (Calc<T>)((win.he[i] - win.hs[i]) * (win.we[j] - win.ws[j]));
      }
    store(out + q * ohw, ys, ohw);
  });
}

// Gradient of pooling: gy (the output's gradient) spread back over each window, onto its first
// maximum (kMax) or evenly over its real cells.
template <class T, bool kMax>
void pool_backward(const Tensor& gy, const Tensor& x, const Windows& win, const Tensor& gx) {
  T* out = static_cast<T*>(gx.data_ptr());
  const int64_t hw = win.h * win.w, ohw = win.ho * win.wo;
  const bool blocks = kMax && is_2x2_blocks(win);
  // Scratch "in" holds x (max only) then gy; "out" accumulates the plane's gradient.
  for_planes<T>(win, (kMax ? hw : 0) + ohw, hw, [&](int64_t q, Calc<T>* in, Calc<T>* gs) {
    Calc<T>* gys = in + (kMax ? hw : 0);
    if constexpr (kMax) load_plane<T>(x, q, in);
    load_plane<T>(gy, q, gys);
    std::fill(gs, gs + hw, Calc<T>(0));
    if (kMax && blocks) {
      for (int64_t i = 0; i < win.ho; ++i)
        for (int64_t j = 0; j < win.wo; ++j)
          gs[argmax_2x2(in, 2 * i * win.w + 2 * j, win.w)] += gys[i * win.wo + j];
      store(out + q * hw, gs, hw);
      return;
    }
    for (int64_t i = 0; i < win.ho; ++i)
      for (int64_t j = 0; j < win.wo; ++j) {
        const Calc<T> g = gys[i * win.wo + j];
        if constexpr (kMax) {
          gs[argmax_window(win, in, i, j)] += g;
        } else {
          const Calc<T> share = g / (Calc<T>)((win.he[i] - win.hs[i]) * (win.we[j] - win.ws[j]));
          for (int64_t h = win.hs[i]; h < win.he[i]; ++h)
            for (int64_t w = win.ws[j]; w < win.we[j]; ++w) gs[h * win.w + w] += share;
        }
      }
    store(out + q * hw, gs, hw);
  });
}

template <class T>
void max_pool_kernel(const KernelCall& c) {
  pool_forward<T, true>(c.inputs[0], pool_windows(c.inputs[0].shape(), c.attrs), c.outputs[0]);
}
template <class T>
void avg_pool_kernel(const KernelCall& c) {
  pool_forward<T, false>(c.inputs[0], pool_windows(c.inputs[0].shape(), c.attrs), c.outputs[0]);
}
template <class T>
void adaptive_kernel(const KernelCall& c) {
  const Shape& ys = c.outputs[0].shape();
  pool_forward<T, false>(c.inputs[0], adaptive_windows(c.inputs[0].shape(), ys[2], ys[3]),
                         c.outputs[0]);
}
template <class T>
void max_pool_grad_kernel(const KernelCall& c) {
  pool_backward<T, true>(c.inputs[0], c.inputs[1], pool_windows(c.inputs[1].shape(), c.attrs),
                         c.outputs[0]);
}
template <class T>
void avg_pool_grad_kernel(const KernelCall& c) {
  pool_backward<T, false>(c.inputs[0], c.inputs[1], pool_windows(c.inputs[1].shape(), c.attrs),
                          c.outputs[0]);
}
template <class T>
void adaptive_grad_kernel(const KernelCall& c) {
  const Shape& gs = c.inputs[0].shape();
  pool_backward<T, false>(c.inputs[0], c.inputs[1],
                          adaptive_windows(c.inputs[1].shape(), gs[2], gs[3]), c.outputs[0]);
}

template <class T>
void register_for() {
  const DType t = dtype_v<T>;
  register_kernel(OpId::k_max_pool2d, kCpuBackend, t, &max_pool_kernel<T>);
  register_kernel(OpId::k_avg_pool2d, kCpuBackend, t, &avg_pool_kernel<T>);
  register_kernel(OpId::k_adaptive_avg_pool2d, kCpuBackend, t, &adaptive_kernel<T>);
  register_kernel(OpId::k_max_pool2d_grad, kCpuBackend, t, &max_pool_grad_kernel<T>);
  register_kernel(OpId::k_avg_pool2d_grad, kCpuBackend, t, &avg_pool_grad_kernel<T>);
  register_kernel(OpId::k_adaptive_avg_pool2d_grad, kCpuBackend, t, &adaptive_grad_kernel<T>);
}

}  // namespace

void register_pool_kernels() {
  register_for<Half>();
  register_for<BFloat16>();
  register_for<float>();
  register_for<double>();
}

}  // namespace spore::cpu
