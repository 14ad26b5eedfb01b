// Geometry of the convolution and pooling ops, shared by their definitions (src/ops/conv.cc,
// which validates it) and the kernels (which read it from attributes already validated).
//
// NOTE [Conv and pool attributes]
// Pairs (stride, padding, dilation, kernel, output_size) hold 2 values (height, width) or 1
// value meaning both. A pool stride may be empty: it then equals the kernel (PyTorch's default).
// Attribute order:
//   conv2d              (stride, padding, dilation, groups)
//   conv2d_grad_input   (input_shape,  stride, padding, dilation, groups)
//   conv2d_grad_weight  (weight_shape, stride, padding, dilation, groups)
//   *_pool2d[_grad]     (kernel, stride, padding, ceil_mode)
//   adaptive_avg_pool2d (output_size); its grad has none (the sizes come from its inputs).
#pragma once
#include <cstdint>
#include <vector>

#include "spore/op_registry.h"

namespace spore::ops {

inline int64_t pair_at(const std::vector<int64_t>& v, int i) {
  return v.size() == 1 ? v[0] : v[i];
}

// Output extent of a convolution along one axis (floor mode); < 1 when the dilated kernel does
// not fit in the padded input.
inline int64_t conv_out_extent(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  const int64_t span = in + 2 * p - d * (k - 1) - 1;
  return span < 0 ? 0 : span / s + 1;
}

// PyTorch's pooling_output_shape: ceil mode rounds up, but the last window must start inside
// the input or its left padding.
inline int64_t pool_out_extent(int64_t in, int64_t k, int64_t s, int64_t p, bool ceil_mode) {
  const int64_t span = in + 2 * p - k;
  if (span < 0) return 0;
  int64_t out = (span + (ceil_mode ? s - 1 : 0)) / s + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

struct ConvGeometry {
  int64_t n = 0, c = 0, h = 0, w = 0;  // input [N, C, H, W]
  int64_t o = 0, kh = 0, kw = 0;       // weight [O, C / groups, kh, kw]
  int64_t groups = 1;
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  int64_t ho = 0, wo = 0;  // output [N, O, ho, wo]

  int64_t cg() const { return c / groups; }  // input channels per group
  int64_t og() const { return o / groups; }  // output channels per group
};

// Reads the geometry of a conv op from its input/weight shapes and its conv attributes starting
// at index `first` (stride, padding, dilation, groups). No validation: see conv.cc.
inline ConvGeometry conv_geometry(const Shape& x, const Shape& w, const Attrs& a, int first) {
  ConvGeometry g;
  g.n = x[0], g.c = x[1], g.h = x[2], g.w = x[3];
  g.o = w[0], g.kh = w[2], g.kw = w[3];
  const auto &st = a.ints(first), &pd = a.ints(first + 1), &dl = a.ints(first + 2);
  g.sh = pair_at(st, 0), g.sw = pair_at(st, 1);
  g.ph = pair_at(pd, 0), g.pw = pair_at(pd, 1);
  g.dh = pair_at(dl, 0), g.dw = pair_at(dl, 1);
  g.groups = a.i(first + 3);
  g.ho = conv_out_extent(g.h, g.kh, g.sh, g.ph, g.dh);
  g.wo = conv_out_extent(g.w, g.kw, g.sw, g.pw, g.dw);
  return g;
}

struct PoolGeometry {
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0;
  int64_t ho = 0, wo = 0;
};

// Geometry of max/avg pooling from the input shape and (kernel, stride, padding, ceil_mode).
inline PoolGeometry pool_geometry(const Shape& x, const Attrs& a) {
  PoolGeometry g;
  g.n = x[0], g.c = x[1], g.h = x[2], g.w = x[3];
  const auto &k = a.ints(0), &st = a.ints(1), &pd = a.ints(2);
  g.kh = pair_at(k, 0), g.kw = pair_at(k, 1);
  g.sh = st.empty() ? g.kh : pair_at(st, 0);
  g.sw = st.empty() ? g.kw : pair_at(st, 1);
  g.ph = pair_at(pd, 0), g.pw = pair_at(pd, 1);
  g.ho = pool_out_extent(g.h, g.kh, g.sh, g.ph, a.b(3));
  g.wo = pool_out_extent(g.w, g.kw, g.sw, g.pw, a.b(3));
  return g;
}

// PyTorch's adaptive windows along one axis: [floor(i * in / out), ceil((i + 1) * in / out)).
inline int64_t adaptive_start(int64_t i, int64_t in, int64_t out) {
  return i * in / out;
}
inline int64_t adaptive_end(int64_t i, int64_t in, int64_t out) {
  return ((i + 1) * in + out - 1) / out;
}

}  // namespace spore::ops
