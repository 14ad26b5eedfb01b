// Direct convolution loops: the float64 kernels (exact float64 arithmetic, the gradcheck
// reference) and the fallback for problems oneDNN refuses.
//
// Each pass is split so that one task owns whole output planes (forward: one (n, o) plane of y;
// grad input: one (n, c) plane of grad_x; grad weight: one (o, c) kernel), and a task sums in a
// fixed order (input channel, kernel row, kernel column, then positions), so results do not
// depend on the thread count. Inner loops run over a row of output positions whose taps fall
// inside the input, found once per tap, so no per-element bounds test is needed.
#include <algorithm>
#include <vector>

#include "conv_internal.h"
#include "thread_pool.h"

namespace spore::cpu {

namespace {

// Output positions [lo, hi) of one axis whose tap at offset `off` (= k * dilation - padding)
// lands inside [0, in): 0 <= o * s + off < in.
struct Range {
  int64_t lo = 0, hi = 0;
};
Range tap_range(int64_t in, int64_t out, int64_t s, int64_t off) {
  Range r;
  r.lo = off >= 0 ? 0 : (-off + s - 1) / s;
  const int64_t top = in - 1 - off;
  r.hi = top < 0 ? 0 : std::min(out, top / s + 1);
  if (r.lo > r.hi) r.lo = r.hi;
  return r;
}

struct Taps {
  std::vector<Range> h, w;
  std::vector<int64_t> offh, offw;
  explicit Taps(const ops::ConvGeometry& g) {
    for (int64_t i = 0; i < g.kh; ++i) {
      offh.push_back(i * g.dh - g.ph);
      h.push_back(tap_range(g.h, g.ho, g.sh, offh.back()));
    }
    for (int64_t j = 0; j < g.kw; ++j) {
      offw.push_back(j * g.dw - g.pw);
      w.push_back(tap_range(g.w, g.wo, g.sw, offw.back()));
    }
  }
};

int64_t grain_for(int64_t work_per_task) {
  return std::max<int64_t>(1, 32768 / std::max<int64_t>(1, work_per_task));
}

template <class T>
void forward(const ops::ConvGeometry& g, const T* x, const T* w, T* y) {
  const Taps taps(g);
  const int64_t plane_in = g.h * g.w, plane_out = g.ho * g.wo, cg = g.cg(), og = g.og(),
                kk = g.kh * g.kw;
  parallel_for(g.n * g.o, grain_for(plane_out * cg * kk), [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t n = t / g.o, oc = t % g.o, grp = oc / og;
      T* yp = y + t * plane_out;
      std::fill(yp, yp + plane_out, T(0));
      for (int64_t ci = 0; ci < cg; ++ci) {
        const T* xp = x + (n * g.c + grp * cg + ci) * plane_in;
        const T* wp = w + (oc * cg + ci) * kk;
        for (int64_t i = 0; i < g.kh; ++i) {
          const Range rh = taps.h[i];
          for (int64_t j = 0; j < g.kw; ++j) {
            const T wv = wp[i * g.kw + j];
            const Range rw = taps.w[j];
            const int64_t ow = taps.offw[j];
            for (int64_t ho = rh.lo; ho < rh.hi; ++ho) {
              const T* row = xp + (ho * g.sh + taps.offh[i]) * g.w;
              T* yrow = yp + ho * g.wo;
              for (int64_t wo = rw.lo; wo < rw.hi; ++wo) yrow[wo] += wv * row[wo * g.sw + ow];
            }
          }
        }
      }
    }
  });
}

template <class T>
void grad_input(const ops::ConvGeometry& g, const T* gy, const T* w, T* gx) {
  const Taps taps(g);
  const int64_t plane_in = g.h * g.w, plane_out = g.ho * g.wo, cg = g.cg(), og = g.og(),
                kk = g.kh * g.kw;
  parallel_for(g.n * g.c, grain_for(plane_out * og * kk), [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t n = t / g.c, c = t % g.c, grp = c / cg, ci = c % cg;
      T* gxp = gx + t * plane_in;
      std::fill(gxp, gxp + plane_in, T(0));
      for (int64_t oc = grp * og; oc < (grp + 1) * og; ++oc) {
        const T* gyp = gy + (n * g.o + oc) * plane_out;
        const T* wp = w + (oc * cg + ci) * kk;
        for (int64_t i = 0; i < g.kh; ++i) {
          const Range rh = taps.h[i];
          for (int64_t j = 0; j < g.kw; ++j) {
            const T wv = wp[i * g.kw + j];
            const Range rw = taps.w[j];
            const int64_t ow = taps.offw[j];
            for (int64_t ho = rh.lo; ho < rh.hi; ++ho) {
              T* row = gxp + (ho * g.sh + taps.offh[i]) * g.w;
              const T* gyrow = gyp + ho * g.wo;
              for (int64_t wo = rw.lo; wo < rw.hi; ++wo) row[wo * g.sw + ow] += wv * gyrow[wo];
            }
          }
        }
      }
    }
  });
}

template <class T>
void grad_weight(const ops::ConvGeometry& g, const T* gy, const T* x, T* gw) {
  const Taps taps(g);
  const int64_t plane_in = g.h * g.w, plane_out = g.ho * g.wo, cg = g.cg(), og = g.og(),
                kk = g.kh * g.kw;
  parallel_for(g.o * cg, grain_for(plane_out * g.n * kk), [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t oc = t / cg, ci = t % cg, c = (oc / og) * cg + ci;
      for (int64_t i = 0; i < g.kh; ++i) {
        const Range rh = taps.h[i];
        for (int64_t j = 0; j < g.kw; ++j) {
          const Range rw = taps.w[j];
          const int64_t ow = taps.offw[j];
          double acc = 0;  // float64 even for the float32 fallback: long sums over N * Ho * Wo
          for (int64_t n = 0; n < g.n; ++n) {
            const T* gyp = gy + (n * g.o + oc) * plane_out;
            const T* xp = x + (n * g.c + c) * plane_in;
            for (int64_t ho = rh.lo; ho < rh.hi; ++ho) {
              const T* row = xp + (ho * g.sh + taps.offh[i]) * g.w;
              const T* gyrow = gyp + ho * g.wo;
              T part = 0;
              for (int64_t wo = rw.lo; wo < rw.hi; ++wo) part += gyrow[wo] * row[wo * g.sw + ow];
              acc += (double)part;
            }
          }
          gw[t * kk + i * g.kw + j] = (T)acc;
        }
      }
    }
  });
}

}  // namespace

template <class T>
void conv_direct(ConvPass pass, const ops::ConvGeometry& g, const T* a, const T* b, T* out) {
  switch (pass) {
    case ConvPass::kForward:
      forward(g, a, b, out);
      break;
    case ConvPass::kGradInput:
      grad_input(g, a, b, out);
      break;
    case ConvPass::kGradWeight:
      grad_weight(g, a, b, out);
      break;
  }
}

template void conv_direct<float>(ConvPass, const ops::ConvGeometry&, const float*, const float*,
                                 float*);
template void conv_direct<double>(ConvPass, const ops::ConvGeometry&, const double*, const double*,
                                  double*);

}  // namespace spore::cpu
