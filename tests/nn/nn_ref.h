// Float64 references for the nn tests, written as plain loops (independent of Spore's kernels),
// and a helper that gradient-checks a cell with respect to its input and its parameters.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "autograd/gradcheck.h"
#include "spore/nn/cell.h"
#include "spore/ops.h"
#include "test_util.h"

namespace spore::test::nnref {

inline std::vector<double> values(const Tensor& t) { return t.contiguous().to_vector<double>(); }

// Tolerances for layer outputs: a few roundings of the dtype (matmul, then bias, ...).
inline Tol layer_tol(DType t) {
  switch (t) {
    case DType::kFloat16: return {4e-3, 4e-3};
    case DType::kBFloat16: return {3e-2, 2e-2};
    case DType::kFloat32: return {2e-5, 2e-5};
    default: return {1e-11, 1e-11};
  }
}

using spore::test::expect_error;  // tests/test_util.h

// y[m, o] = sum_i x[m, i] * w[o, i] + b[o]
inline std::vector<double> dense(const std::vector<double>& x, const std::vector<double>& w,
                                 const std::vector<double>& b, int64_t rows, int64_t in, int64_t out) {
  std::vector<double> y((size_t)(rows * out));
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t o = 0; o < out; ++o) {
      double s = b.empty() ? 0 : b[o];
      for (int64_t i = 0; i < in; ++i) s += x[m * in + i] * w[o * in + i];
      y[m * out + o] = s;
    }
  return y;
}

struct Conv2dRef {
  int64_t sh = 1, sw = 1, pt = 0, pb = 0, pl = 0, pr = 0, dh = 1, dw = 1, groups = 1;
};
// x [N, C, H, W], w [O, C/groups, KH, KW] -> [N, O, Ho, Wo] (and its shape in `out_shape`).
inline std::vector<double> conv2d(const std::vector<double>& x, std::vector<int64_t> xs, const std::vector<double>& w,
                                  std::vector<int64_t> ws, const std::vector<double>& b, const Conv2dRef& p,
                                  std::vector<int64_t>& out_shape) {
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], O = ws[0], CG = ws[1], KH = ws[2], KW = ws[3];
  const int64_t Ho = (H + p.pt + p.pb - p.dh * (KH - 1) - 1) / p.sh + 1;
  const int64_t Wo = (W + p.pl + p.pr - p.dw * (KW - 1) - 1) / p.sw + 1;
  out_shape = {N, O, Ho, Wo};
  const int64_t og = O / p.groups;
  std::vector<double> y((size_t)(N * O * Ho * Wo));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t i = 0; i < Ho; ++i)
        for (int64_t j = 0; j < Wo; ++j) {
          double s = b.empty() ? 0 : b[o];
          const int64_t g = o / og;
          for (int64_t c = 0; c < CG; ++c)
            for (int64_t a = 0; a < KH; ++a)
              for (int64_t e = 0; e < KW; ++e) {
                const int64_t h = i * p.sh - p.pt + a * p.dh, ww = j * p.sw - p.pl + e * p.dw;
                if (h < 0 || h >= H || ww < 0 || ww >= W) continue;
                s += x[((n * C + g * CG + c) * H + h) * W + ww] * w[((o * CG + c) * KH + a) * KW + e];
              }
          y[((n * O + o) * Ho + i) * Wo + j] = s;
        }
  (void)C;
  return y;
}

// Max or average pooling with symmetric padding; the average counts only cells inside the input.
inline std::vector<double> pool2d(const std::vector<double>& x, std::vector<int64_t> xs, int64_t kh, int64_t kw,
                                  int64_t sh, int64_t sw, int64_t ph, int64_t pw, bool max_pool, bool ceil_mode,
                                  std::vector<int64_t>& out_shape) {
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  auto extent = [&](int64_t in, int64_t k, int64_t s, int64_t p) {
    int64_t num = in + 2 * p - k;
    int64_t o = (ceil_mode ? (num + s - 1) / s : num / s) + 1;
    if (ceil_mode && (o - 1) * s >= in + p) --o;  // the last window must start inside the input or left pad
    return o;
  };
  const int64_t Ho = extent(H, kh, sh, ph), Wo = extent(W, kw, sw, pw);
  out_shape = {N, C, Ho, Wo};
  std::vector<double> y((size_t)(N * C * Ho * Wo));
  for (int64_t nc = 0; nc < N * C; ++nc)
    for (int64_t i = 0; i < Ho; ++i)
      for (int64_t j = 0; j < Wo; ++j) {
        double acc = max_pool ? -std::numeric_limits<double>::infinity() : 0;
        int64_t cnt = 0;
        for (int64_t a = 0; a < kh; ++a)
          for (int64_t e = 0; e < kw; ++e) {
            const int64_t h = i * sh - ph + a, w = j * sw - pw + e;
            if (h < 0 || h >= H || w < 0 || w >= W) continue;
            const double v = x[(nc * H + h) * W + w];
            acc = max_pool ? std::max(acc, v) : acc + v;
            ++cnt;
          }
        y[(nc * Ho + i) * Wo + j] = max_pool ? acc : acc / (double)cnt;
      }
  return y;
}

inline std::vector<double> adaptive_avg(const std::vector<double>& x, std::vector<int64_t> xs, int64_t Ho,
                                        int64_t Wo) {
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  std::vector<double> y((size_t)(N * C * Ho * Wo));
  for (int64_t nc = 0; nc < N * C; ++nc)
    for (int64_t i = 0; i < Ho; ++i)
      for (int64_t j = 0; j < Wo; ++j) {
        const int64_t h0 = i * H / Ho, h1 = ((i + 1) * H + Ho - 1) / Ho;
        const int64_t w0 = j * W / Wo, w1 = ((j + 1) * W + Wo - 1) / Wo;
        double s = 0;
        for (int64_t h = h0; h < h1; ++h)
          for (int64_t w = w0; w < w1; ++w) s += x[(nc * H + h) * W + w];
        y[(nc * Ho + i) * Wo + j] = s / (double)((h1 - h0) * (w1 - w0));
      }
  return y;
}

// log_softmax over axis 1 of [N, C, inner].
inline std::vector<double> log_softmax1(const std::vector<double>& x, int64_t N, int64_t C, int64_t inner) {
  std::vector<double> y(x.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < inner; ++k) {
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t c = 0; c < C; ++c) m = std::max(m, x[(n * C + c) * inner + k]);
      double s = 0;
      for (int64_t c = 0; c < C; ++c) s += std::exp(x[(n * C + c) * inner + k] - m);
      for (int64_t c = 0; c < C; ++c) y[(n * C + c) * inner + k] = x[(n * C + c) * inner + k] - m - std::log(s);
    }
  return y;
}

// Gradient check of a cell in float64 with respect to its input and every parameter: the
// parameters are replaced by the checked inputs for each evaluation (Parameter::set_value), so
// the cell reads the very tensors value_and_grad differentiates; they are restored afterwards.
inline void gradcheck_cell(nn::Cell& cell, const Tensor& x, const std::string& what, bool check_input = true,
                           double tol = 1e-6) {
  std::vector<Parameter> ps = cell.trainable_params();
  std::vector<Tensor> saved, inputs{x};
  for (auto& p : ps) {
    saved.push_back(p.value());
    inputs.push_back(p.value());
  }
  TensorFn fn = [&](const std::vector<Tensor>& xs) {
    for (size_t i = 0; i < ps.size(); ++i) ps[i].set_value(xs[i + 1]);
    return cell(xs[0]);
  };
  std::vector<int> positions;
  for (int i = check_input && is_floating(x.dtype()) ? 0 : 1; i < (int)inputs.size(); ++i) positions.push_back(i);
  gradcheck(fn, inputs, positions, 1e-6, tol, what);
  for (size_t i = 0; i < ps.size(); ++i) ps[i].set_value(saved[i]);
}

}  // namespace spore::test::nnref
