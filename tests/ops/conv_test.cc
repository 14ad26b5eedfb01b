// Convolution and pooling ops against float64 references computed here with plain loops, for
// every floating dtype; the gradient ops also against central finite differences of the forward
// ops in float64; the backward rules; errors.
#include <cmath>
#include <functional>
#include <limits>

#include "autograd/gradcheck.h"
#include "spore/context.h"
#include "spore/op_registry.h"
#include "test_util.h"

namespace spore::test {
namespace {

const DType kFloats[] = {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64};

int64_t numel_of(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}
int64_t at(const std::vector<int64_t>& v, int i) {
  return v.size() == 1 ? v[0] : v[i];
}

// A tensor holding `v` (row-major for `shape`) as a non-contiguous view: the storage is laid out
// as [N, H, C, W] with a gap after every W elements, so every stride differs from contiguous.
Tensor strided_nchw(const std::vector<double>& v, const std::vector<int64_t>& s, DType dt) {
  const int64_t N = s[0], C = s[1], H = s[2], W = s[3], Wp = W + 1;
  std::vector<double> buf((size_t)(N * H * C * Wp + 3), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w)
          buf[3 + ((n * H + h) * C + c) * Wp + w] = v[((n * C + c) * H + h) * W + w];
  Tensor base = make_tensor(buf, {(int64_t)buf.size()}, dt);
  Tensor t = Tensor::view_of(base.storage(), 3, Shape(s), Shape{H * C * Wp, Wp, C * Wp, 1}, dt);
  EXPECT_FALSE(t.is_contiguous());
  return t;
}

Tensor make(const std::vector<double>& v, const std::vector<int64_t>& s, DType dt, bool strided) {
  return strided ? strided_nchw(v, s, dt) : make_tensor(v, Shape(s), dt);
}

// Conv errors name the op as "op:" (so "conv2d" does not match inside "conv2d_grad_input").
void expect_error(const std::function<void()>& fn, ErrorCode code, const std::string& op,
                  const std::string& fragment) {
  test::expect_error(fn, code, {op + ":", fragment});
}

// ---- convolution reference -------------------------------------------------------------------

struct ConvCase {
  std::string name;
  std::vector<int64_t> xs, ws;
  Conv2dOptions opt;
};

std::vector<int64_t> conv_out_shape(const ConvCase& c) {
  std::vector<int64_t> ys{c.xs[0], c.ws[0], 0, 0};
  for (int i = 0; i < 2; ++i)
    ys[2 + i] =
        (c.xs[2 + i] + 2 * at(c.opt.padding, i) - at(c.opt.dilation, i) * (c.ws[2 + i] - 1) - 1) /
            at(c.opt.stride, i) +
        1;
  return ys;
}

// Visits every (output element, input element, weight element) triple of the convolution.
void conv_visit(const ConvCase& c, const std::function<void(int64_t, int64_t, int64_t)>& fn) {
  const auto ys = conv_out_shape(c);
  const int64_t N = c.xs[0], C = c.xs[1], H = c.xs[2], W = c.xs[3], O = c.ws[0], kh = c.ws[2],
                kw = c.ws[3];
  const int64_t G = c.opt.groups, Cg = C / G, Og = O / G;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t oh = 0; oh < ys[2]; ++oh)
        for (int64_t ow = 0; ow < ys[3]; ++ow)
          for (int64_t ci = 0; ci < Cg; ++ci)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t h =
                    oh * at(c.opt.stride, 0) - at(c.opt.padding, 0) + i * at(c.opt.dilation, 0);
                const int64_t w =
                    ow * at(c.opt.stride, 1) - at(c.opt.padding, 1) + j * at(c.opt.dilation, 1);
                if (h < 0 || h >= H || w < 0 || w >= W) continue;
                const int64_t c_in = (o / Og) * Cg + ci;
                fn(((n * O + o) * ys[2] + oh) * ys[3] + ow, ((n * C + c_in) * H + h) * W + w,
                   ((o * Cg + ci) * kh + i) * kw + j);
              }
}

struct ConvRef {
  std::vector<double> y, gx, gw;
};
ConvRef conv_ref(const ConvCase& c, const std::vector<double>& x, const std::vector<double>& w,
                 const std::vector<double>& gy) {
  ConvRef r;
  r.y.assign((size_t)numel_of(conv_out_shape(c)), 0.0);
  r.gx.assign(x.size(), 0.0);
  r.gw.assign(w.size(), 0.0);
  conv_visit(c, [&](int64_t yi, int64_t xi, int64_t wi) {
    r.y[yi] += x[xi] * w[wi];
    r.gx[xi] += gy[yi] * w[wi];
    r.gw[wi] += gy[yi] * x[xi];
  });
  return r;
}

const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> cases{
      {"basic 3x3", {2, 3, 7, 6}, {4, 3, 3, 3}, {}},
      {"stride (2,1) padding (1,2)", {2, 2, 7, 6}, {3, 2, 3, 3}, {{2, 1}, {1, 2}, {1, 1}, 1}},
      {"dilation (2,1) stride 2 padding 1", {1, 2, 8, 7}, {2, 2, 3, 2}, {{2}, {1}, {2, 1}, 1}},
      {"groups 2, 2x3 kernel", {2, 4, 6, 7}, {6, 2, 2, 3}, {{1}, {1, 0}, {1}, 2}},
      {"depthwise padding 1", {2, 3, 5, 6}, {3, 1, 3, 3}, {{1}, {1}, {1}, 3}},
      {"depthwise multiplier 2, stride 2", {1, 3, 7, 7}, {6, 1, 3, 3}, {{2}, {1}, {1}, 3}},
      {"1x1 stride 2", {2, 5, 5, 4}, {3, 5, 1, 1}, {{2}, {0}, {1}, 1}},
      {"padding larger than kernel", {1, 2, 3, 3}, {2, 2, 2, 2}, {{1}, {3}, {1}, 1}},
      // few channels under a large kernel (the im2col + gemm path): an STFT-like 1-D
      // convolution, and a 9x8 kernel with padding, stride and dilation
      {"1-D, 80 taps, stride 20", {2, 1, 1, 400}, {8, 1, 1, 80}, {{1, 20}, {0}, {1}, 1}},
      {"9x8 over 2 channels, stride (2,1) padding (3,2) dilation (1,2)", {2, 2, 12, 11}, {3, 2, 9, 8},
       {{2, 1}, {3, 2}, {1, 2}, 1}},
  };
  return cases;
}

// Accumulation order differs from the reference: float32 gets a tolerance scaled for sums of
// tens to hundreds of terms.
Tol conv_tol(DType dt) {
  return dt == DType::kFloat32 ? Tol{2e-5, 2e-5} : tolerance(dt);
}

void check_conv_case(const ConvCase& c, DType dt, bool strided) {
  const std::string what = c.name + " " + dtype_name(dt) + (strided ? " strided" : "");
  const auto ys = conv_out_shape(c);
  auto xv = random_values(numel_of(c.xs), dt, -1, 1, 11);
  auto wv = random_values(numel_of(c.ws), dt, -1, 1, 12);
  auto gv = random_values(numel_of(ys), dt, -1, 1, 13);
  ConvRef ref = conv_ref(c, xv, wv, gv);
  Tensor x = make(xv, c.xs, dt, strided), w = make(wv, c.ws, dt, strided),
         gy = make(gv, ys, dt, strided);

  Tensor y = conv2d(x, w, c.opt);
  EXPECT_EQ(y.shape(), Shape(ys)) << what;
  EXPECT_EQ(y.dtype(), dt) << what;
  expect_close(y, ref.y, conv_tol(dt), "conv2d " + what);

  Tensor gx = conv2d_grad_input(gy, w, c.xs, c.opt);
  EXPECT_EQ(gx.shape(), Shape(c.xs)) << what;
  EXPECT_EQ(gx.dtype(), dt) << what;
  expect_close(gx, ref.gx, conv_tol(dt), "conv2d_grad_input " + what);

  Tensor gw = conv2d_grad_weight(gy, x, c.ws, c.opt);
  EXPECT_EQ(gw.shape(), Shape(c.ws)) << what;
  EXPECT_EQ(gw.dtype(), dt) << what;
  expect_close(gw, ref.gw, conv_tol(dt), "conv2d_grad_weight " + what);
}

TEST(ConvOps, Conv2dAllCasesAllDtypes) {
  for (const ConvCase& c : conv_cases())
    for (DType dt : kFloats) check_conv_case(c, dt, false);
}

TEST(ConvOps, Conv2dStridedInputs) {
  for (const ConvCase& c : conv_cases())
    for (DType dt : kFloats) check_conv_case(c, dt, true);
}

TEST(ConvOps, Conv2dLargerFloat32) {
  // Big enough for oneDNN's threaded gemm path and several tasks of the direct kernels.
  ConvCase c{"larger", {2, 16, 12, 10}, {16, 16, 3, 3}, {{1}, {1}, {1}, 1}};
  for (DType dt : {DType::kFloat32, DType::kFloat64}) check_conv_case(c, dt, false);
  ConvCase dw{"larger depthwise", {2, 16, 12, 12}, {16, 1, 3, 3}, {{1}, {1}, {1}, 16}};
  check_conv_case(dw, DType::kFloat32, false);
}

TEST(ConvOps, Conv2dOnOneDnnsBlockedLayouts) {
  // Forward 3x3 float32 convolutions with at least 32x32 output pixels and 2^20 multiply-adds run
  // over oneDNN's blocked layouts with reorders in and out (NOTE [oneDNN convolution]): strides
  // 1 and 2, padding, a batch of two, odd channel counts (blocks of 16 with a partial one); the
  // gradients stay on the plain path. All against the float64 reference.
  const ConvCase cases[] = {
      {"blocked 3x3", {2, 19, 34, 33}, {21, 19, 3, 3}, {{1}, {1}, {1}, 1}},
      {"blocked 3x3 stride 2", {1, 24, 70, 66}, {24, 24, 3, 3}, {{2}, {1}, {1}, 1}},
      {"blocked 5x5 rgb", {1, 3, 48, 40}, {16, 3, 5, 5}, {{1}, {2}, {1}, 1}},
  };
  for (const ConvCase& c : cases) check_conv_case(c, DType::kFloat32, false);
  // At two threads one image is cut by output channels into slabs on the pool (NOTE [oneDNN on
  // the pool]): 40 channels as 32 + 8, 24 as 16 + 8.
  const int saved = num_threads();
  set_num_threads(2);
  const ConvCase pooled[] = {
      {"blocked slabs 3x3", {1, 19, 34, 33}, {40, 19, 3, 3}, {{1}, {1}, {1}, 1}},
      {"blocked slabs stride 2", {1, 24, 70, 66}, {24, 24, 3, 3}, {{2}, {1}, {1}, 1}},
  };
  for (const ConvCase& c : pooled) check_conv_case(c, DType::kFloat32, false);
  set_num_threads(saved);
}

TEST(ConvOps, Conv2dPointwiseOnThePoolAtTwoThreads) {
  // NOTE [oneDNN on the pool]: at two threads a float32 1x1 convolution (stride 1, no padding)
  // over 2^20 multiply-adds runs as one pool-cut matmul per image; strided or padded 1x1s and
  // grouped ones stay on oneDNN's convolution. All against the float64 reference.
  const int saved = num_threads();
  set_num_threads(2);
  const ConvCase cases[] = {
      {"1x1 wide", {2, 40, 32, 33}, {48, 40, 1, 1}, {{1}, {0}, {1}, 1}},
      {"1x1 narrow", {1, 64, 6, 7}, {600, 64, 1, 1}, {{1}, {0}, {1}, 1}},
      {"1x1 stride 2", {1, 40, 32, 32}, {48, 40, 1, 1}, {{2}, {0}, {1}, 1}},
      {"1x1 grouped", {1, 64, 32, 32}, {64, 32, 1, 1}, {{1}, {0}, {1}, 2}},
  };
  for (const ConvCase& c : cases) check_conv_case(c, DType::kFloat32, false);
  set_num_threads(saved);
}

TEST(ConvOps, Conv2dMixedDtypesPromote) {
  const ConvCase& c = conv_cases()[0];
  auto xv = random_values(numel_of(c.xs), DType::kFloat32, -1, 1, 1);
  auto wv = random_values(numel_of(c.ws), DType::kFloat32, -1, 1, 2);
  Tensor y = conv2d(make_tensor(xv, Shape(c.xs), DType::kFloat32),
                    make_tensor(wv, Shape(c.ws), DType::kFloat64));
  EXPECT_EQ(y.dtype(), DType::kFloat64);
  expect_close(y, conv_ref(c, xv, wv, std::vector<double>(numel_of(conv_out_shape(c)))).y);
}

TEST(ConvOps, Conv2dEmptyExtents) {
  // An empty batch gives an empty output; an empty batch's weight gradient is all zeros.
  Tensor x = zeros({0, 2, 5, 5}), w = ones({3, 2, 3, 3});
  Tensor y = conv2d(x, w);
  EXPECT_EQ(y.shape(), Shape({0, 3, 3, 3}));
  Tensor gw = conv2d_grad_weight(zeros({0, 3, 3, 3}), x, {3, 2, 3, 3});
  expect_close(gw, std::vector<double>(54, 0.0), "grad weight of an empty batch");
  // Zero input channels: every sum is empty.
  Tensor y0 = conv2d(zeros({1, 0, 4, 4}, DType::kFloat64), zeros({2, 0, 3, 3}, DType::kFloat64));
  expect_close(y0, std::vector<double>(8, 0.0), "no input channels");
}

// The gradient ops against central differences of L = sum(gy * conv2d(x, w)) in float64.
TEST(ConvOps, Conv2dGradOpsMatchFiniteDifferences) {
  const DType f64 = DType::kFloat64;
  for (int k : {1, 3, 5}) {
    ConvCase c = conv_cases()[k];
    c.xs[0] = 1;  // keep the number of forward evaluations small
    const auto ys = conv_out_shape(c);
    auto xv = random_values(numel_of(c.xs), f64, -1, 1, 21);
    auto wv = random_values(numel_of(c.ws), f64, -1, 1, 22);
    auto gv = random_values(numel_of(ys), f64, -1, 1, 23);
    Tensor gy = make_tensor(gv, Shape(ys), f64);
    auto loss = [&](const std::vector<double>& x, const std::vector<double>& w) {
      std::vector<double> y =
          conv2d(make_tensor(x, Shape(c.xs), f64), make_tensor(w, Shape(c.ws), f64), c.opt)
              .to_vector<double>();
      double s = 0;
      for (size_t i = 0; i < y.size(); ++i) s += y[i] * gv[i];
      return s;
    };
    const double eps = 1e-6;
    std::vector<double> gx =
        conv2d_grad_input(gy, make_tensor(wv, Shape(c.ws), f64), c.xs, c.opt).to_vector<double>();
    for (size_t i = 0; i < xv.size(); ++i) {
      auto p = xv, m = xv;
      p[i] += eps, m[i] -= eps;
      EXPECT_NEAR(gx[i], (loss(p, wv) - loss(m, wv)) / (2 * eps), 1e-6)
          << c.name << " d/dx[" << i << "]";
    }
    std::vector<double> gw =
        conv2d_grad_weight(gy, make_tensor(xv, Shape(c.xs), f64), c.ws, c.opt).to_vector<double>();
    for (size_t i = 0; i < wv.size(); ++i) {
      auto p = wv, m = wv;
      p[i] += eps, m[i] -= eps;
      EXPECT_NEAR(gw[i], (loss(xv, p) - loss(xv, m)) / (2 * eps), 1e-6)
          << c.name << " d/dw[" << i << "]";
    }
  }
}

TEST(ConvOps, Conv2dFloat64IndependentOfThreadCount) {
  const ConvCase c{"threads", {3, 4, 9, 8}, {6, 2, 3, 3}, {{1}, {1}, {1}, 2}};
  const auto ys = conv_out_shape(c);
  const DType f64 = DType::kFloat64;
  Tensor x = make_tensor(random_values(numel_of(c.xs), f64, -1, 1, 3), Shape(c.xs), f64);
  Tensor w = make_tensor(random_values(numel_of(c.ws), f64, -1, 1, 4), Shape(c.ws), f64);
  Tensor gy = make_tensor(random_values(numel_of(ys), f64, -1, 1, 5), Shape(ys), f64);
  const int saved = num_threads();
  std::vector<std::vector<double>> runs;
  for (int t : {1, 3}) {
    set_num_threads(t);
    for (const Tensor& r : {conv2d(x, w, c.opt), conv2d_grad_input(gy, w, c.xs, c.opt),
                            conv2d_grad_weight(gy, x, c.ws, c.opt)})
      runs.push_back(r.to_vector<double>());
  }
  set_num_threads(saved);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(runs[i], runs[i + 3]) << "result " << i;
}

// ---- pooling reference -----------------------------------------------------------------------

int64_t pool_extent(int64_t in, int64_t k, int64_t s, int64_t p, bool ceil_mode) {
  const double q = (double)(in + 2 * p - k) / (double)s;
  int64_t out = (int64_t)(ceil_mode ? std::ceil(q) : std::floor(q)) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;  // the last window must start inside
  return out;
}

struct PoolCase {
  std::string name;
  std::vector<int64_t> xs;
  Pool2dOptions opt;
};

struct PoolRef {
  std::vector<int64_t> ys;
  std::vector<double> max, avg, max_grad, avg_grad;
};

// Windows clipped to the input; the first maximum in row-major order (NaN wins, first NaN).
PoolRef pool_ref(const PoolCase& c, const std::vector<double>& x, const std::vector<double>& gy) {
  const int64_t N = c.xs[0], C = c.xs[1], H = c.xs[2], W = c.xs[3];
  const int64_t kh = at(c.opt.kernel, 0), kw = at(c.opt.kernel, 1);
  const int64_t sh = c.opt.stride.empty() ? kh : at(c.opt.stride, 0);
  const int64_t sw = c.opt.stride.empty() ? kw : at(c.opt.stride, 1);
  const int64_t ph = at(c.opt.padding, 0), pw = at(c.opt.padding, 1);
  PoolRef r;
  r.ys = {N, C, pool_extent(H, kh, sh, ph, c.opt.ceil_mode),
          pool_extent(W, kw, sw, pw, c.opt.ceil_mode)};
  const int64_t Ho = r.ys[2], Wo = r.ys[3];
  r.max.resize((size_t)(N * C * Ho * Wo));
  r.avg.resize(r.max.size());
  r.max_grad.assign(x.size(), 0.0);
  r.avg_grad.assign(x.size(), 0.0);
  for (int64_t p = 0; p < N * C; ++p)
    for (int64_t i = 0; i < Ho; ++i)
      for (int64_t j = 0; j < Wo; ++j) {
        const size_t yi = (size_t)((p * Ho + i) * Wo + j);
        double best = -std::numeric_limits<double>::infinity(), sum = 0;
        int64_t best_i = -1, count = 0;
        for (int64_t h = i * sh - ph; h < i * sh - ph + kh; ++h)
          for (int64_t w = j * sw - pw; w < j * sw - pw + kw; ++w) {
            if (h < 0 || h >= H || w < 0 || w >= W) continue;
            const int64_t xi = (p * H + h) * W + w;
            const double v = x[(size_t)xi];
            if (best_i < 0 || v > best || (std::isnan(v) && !std::isnan(best)))
              best = v, best_i = xi;
            sum += v, ++count;
          }
        r.max[yi] = best;
        r.avg[yi] = sum / (double)count;
        if (!gy.empty()) {
          r.max_grad[(size_t)best_i] += gy[yi];
          for (int64_t h = std::max<int64_t>(i * sh - ph, 0); h < std::min(i * sh - ph + kh, H);
               ++h)
            for (int64_t w = std::max<int64_t>(j * sw - pw, 0); w < std::min(j * sw - pw + kw, W);
                 ++w)
              r.avg_grad[(size_t)((p * H + h) * W + w)] += gy[yi] / (double)count;
        }
      }
  return r;
}

const std::vector<PoolCase>& pool_cases() {
  static const std::vector<PoolCase> cases{
      {"2x2 default stride (drops a row)", {2, 3, 7, 6}, {{2, 2}, {}, {0, 0}, false}},
      {"3x3 stride 2 padding 1 ceil", {2, 2, 7, 6}, {{3}, {2}, {1}, true}},
      {"(3,2) stride (2,1) padding 1 ceil", {1, 3, 7, 6}, {{3, 2}, {2, 1}, {1}, true}},
      {"ceil: last window would start in the padding", {1, 2, 5, 5}, {{2}, {2}, {1}, true}},
      {"ceil without padding", {2, 1, 5, 7}, {{2, 3}, {2}, {0}, true}},
      {"3x3 stride 1 padding 1", {1, 2, 4, 5}, {{3}, {1}, {1}, false}},
      {"kernel = input", {2, 2, 4, 3}, {{4, 3}, {}, {0}, false}},
  };
  return cases;
}

void check_pool_case(const PoolCase& c, DType dt, bool strided, bool ties) {
  const std::string what =
      c.name + " " + dtype_name(dt) + (strided ? " strided" : "") + (ties ? " ties" : "");
  // With ties, values come from {-1, 0, 1}: windows hold repeated maxima.
  auto xv = ties ? random_values(numel_of(c.xs), DType::kInt32, -1, 1, 31)
                 : random_values(numel_of(c.xs), dt, -2, 2, 31);
  PoolRef shape_only = pool_ref(c, xv, {});
  auto gv = random_values(numel_of(shape_only.ys), dt, -1, 1, 32);
  PoolRef ref = pool_ref(c, xv, gv);
  Tensor x = make(xv, c.xs, dt, strided), gy = make(gv, ref.ys, dt, strided);

  Tensor mx = max_pool2d(x, c.opt);
  EXPECT_EQ(mx.shape(), Shape(ref.ys)) << what;
  EXPECT_EQ(mx.dtype(), dt) << what;
  expect_close(mx, ref.max, Tol{0, 0}, "max_pool2d " + what);
  Tensor av = avg_pool2d(x, c.opt);
  EXPECT_EQ(av.shape(), Shape(ref.ys)) << what;
  expect_close(av, ref.avg, "avg_pool2d " + what);
  Tensor mg = max_pool2d_grad(gy, x, c.opt);
  EXPECT_EQ(mg.shape(), Shape(c.xs)) << what;
  EXPECT_EQ(mg.dtype(), dt) << what;
  expect_close(mg, ref.max_grad, "max_pool2d_grad " + what);
  Tensor ag = avg_pool2d_grad(gy, x, c.opt);
  EXPECT_EQ(ag.shape(), Shape(c.xs)) << what;
  expect_close(ag, ref.avg_grad, "avg_pool2d_grad " + what);
}

TEST(PoolOps, MaxAvgAllCasesAllDtypes) {
  for (const PoolCase& c : pool_cases())
    for (DType dt : kFloats) {
      check_pool_case(c, dt, false, false);
      check_pool_case(c, dt, true, false);
      check_pool_case(c, dt, false, true);
    }
}

TEST(PoolOps, MaxPoolNaNAndInfinity) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  // One 2x4 plane, two 2x2 windows: [-inf, -inf; -inf, -inf] and [1, nan; nan, 5].
  std::vector<double> xv{-inf, -inf, 1, nan, -inf, -inf, nan, 5};
  for (DType dt : kFloats) {
    Tensor x = make_tensor(xv, {1, 1, 2, 4}, dt);
    std::vector<double> y = max_pool2d(x).to_vector<double>();
    EXPECT_EQ(y[0], -inf) << dtype_name(dt);
    EXPECT_TRUE(std::isnan(y[1])) << dtype_name(dt);
    // Gradients go to the first element of the all -inf window and to the first NaN.
    Tensor g = max_pool2d_grad(make_tensor({2, 3}, {1, 1, 1, 2}, dt), x);
    expect_close(g, {2, 0, 0, 3, 0, 0, 0, 0}, Tol{0, 0}, std::string("max grad ") + dtype_name(dt));
  }
}

TEST(PoolOps, OverlappingMaxWindowsKeepTheFirstMaximum) {
  // 2x2 windows at stride 1 (PP-HGNetV2's stem) and 3x3 at stride 1 with padding 1: the kernel
  // takes them separably, row maxima first. The first maximum in row-major order must still win:
  // -0 before +0 stays -0, and any NaN in a window makes its output NaN.
  const double nan = std::nan("");
  std::vector<double> xv(5 * 7, -1.0);
  xv[0] = -0.0, xv[1] = 0.0, xv[7] = 0.0;     // window (0, 0): -0, +0 / +0, -1
  xv[10] = nan, xv[18] = 2.0;                 // row 1 col 3, row 2 col 4
  xv[28] = 0.0, xv[29] = -0.0, xv[22] = -0.0;  // row 4 cols 0-1, row 3 col 1
  for (DType dt : kFloats)
    for (int k : {2, 3}) {
      Pool2dOptions o;
      o.kernel = {k};
      o.stride = {1};
      o.padding = {k == 3 ? 1 : 0};
      const Tensor x = make_tensor(xv, {1, 1, 5, 7}, dt);
      const std::vector<double> y = max_pool2d(x, o).to_vector<double>();
      const int64_t ho = k == 2 ? 4 : 5, wo = k == 2 ? 6 : 7, p = k == 3 ? 1 : 0;
      ASSERT_EQ((int64_t)y.size(), ho * wo);
      for (int64_t i = 0; i < ho; ++i)
        for (int64_t j = 0; j < wo; ++j) {  // the reference: row-major walk, first maximum, first NaN
          double m = 0;
          bool any = false, is_nan = false;
          for (int64_t r = std::max<int64_t>(i - p, 0); r < std::min<int64_t>(i - p + k, 5); ++r)
            for (int64_t c = std::max<int64_t>(j - p, 0); c < std::min<int64_t>(j - p + k, 7); ++c) {
              const double v = xv[(size_t)(r * 7 + c)];
              if (!any || (!is_nan && (v > m || v != v))) m = v, is_nan = v != v;
              any = true;
            }
          const double got = y[(size_t)(i * wo + j)];
          const std::string at = std::string(dtype_name(dt)) + " k" + std::to_string(k) + " at (" +
                                 std::to_string(i) + ", " + std::to_string(j) + ")";
          if (is_nan) {
            EXPECT_TRUE(std::isnan(got)) << at;
          } else {
            EXPECT_EQ(got, m) << at;
            EXPECT_EQ(std::signbit(got), std::signbit(m)) << at;
          }
        }
    }
}

TEST(PoolOps, GradOpsMatchFiniteDifferences) {
  const DType f64 = DType::kFloat64;
  const double eps = 1e-6;
  for (int k : {1, 3}) {
    const PoolCase& c = pool_cases()[k];
    auto xv = random_values(numel_of(c.xs), f64, -2, 2, 41);
    const auto ys = pool_ref(c, xv, {}).ys;
    auto gv = random_values(numel_of(ys), f64, -1, 1, 42);
    Tensor gy = make_tensor(gv, Shape(ys), f64), x = make_tensor(xv, Shape(c.xs), f64);
    for (bool is_max : {true, false}) {
      auto loss = [&](const std::vector<double>& v) {
        Tensor t = make_tensor(v, Shape(c.xs), f64);
        std::vector<double> y =
            (is_max ? max_pool2d(t, c.opt) : avg_pool2d(t, c.opt)).to_vector<double>();
        double s = 0;
        for (size_t i = 0; i < y.size(); ++i) s += y[i] * gv[i];
        return s;
      };
      std::vector<double> g =
          (is_max ? max_pool2d_grad(gy, x, c.opt) : avg_pool2d_grad(gy, x, c.opt))
              .to_vector<double>();
      for (size_t i = 0; i < xv.size(); ++i) {
        auto p = xv, m = xv;
        p[i] += eps, m[i] -= eps;
        EXPECT_NEAR(g[i], (loss(p) - loss(m)) / (2 * eps), 1e-6)
            << c.name << (is_max ? " max" : " avg") << " [" << i << "]";
      }
    }
  }
}

// ---- adaptive average pooling ----------------------------------------------------------------

std::vector<double> adaptive_ref(const std::vector<double>& x, const std::vector<int64_t>& xs,
                                 int64_t Ho, int64_t Wo, const std::vector<double>& gy,
                                 std::vector<double>* gx) {
  const int64_t P = xs[0] * xs[1], H = xs[2], W = xs[3];
  std::vector<double> y((size_t)(P * Ho * Wo));
  if (gx) gx->assign(x.size(), 0.0);
  for (int64_t p = 0; p < P; ++p)
    for (int64_t i = 0; i < Ho; ++i)
      for (int64_t j = 0; j < Wo; ++j) {
        const int64_t h0 = (int64_t)std::floor((double)(i * H) / Ho),
                      h1 = (int64_t)std::ceil((double)((i + 1) * H) / Ho);
        const int64_t w0 = (int64_t)std::floor((double)(j * W) / Wo),
                      w1 = (int64_t)std::ceil((double)((j + 1) * W) / Wo);
        const double count = (double)((h1 - h0) * (w1 - w0));
        double s = 0;
        for (int64_t h = h0; h < h1; ++h)
          for (int64_t w = w0; w < w1; ++w) s += x[(size_t)((p * H + h) * W + w)];
        const size_t yi = (size_t)((p * Ho + i) * Wo + j);
        y[yi] = s / count;
        if (gx)
          for (int64_t h = h0; h < h1; ++h)
            for (int64_t w = w0; w < w1; ++w)
              (*gx)[(size_t)((p * H + h) * W + w)] += gy[yi] / count;
      }
  return y;
}

TEST(PoolOps, AdaptiveAvgAllDtypes) {
  const std::vector<int64_t> xs{2, 3, 7, 6};
  const std::vector<std::vector<int64_t>> outs{{3, 4}, {1}, {7, 6}, {9, 8}, {2, 5}};
  for (DType dt : kFloats)
    for (bool strided : {false, true})
      for (const auto& os : outs) {
        const int64_t Ho = at(os, 0), Wo = at(os, 1);
        const std::string what = std::string(dtype_name(dt)) + " -> " + std::to_string(Ho) + "x" +
                                 std::to_string(Wo) + (strided ? " strided" : "");
        auto xv = random_values(numel_of(xs), dt, -2, 2, 51);
        auto gv = random_values(xs[0] * xs[1] * Ho * Wo, dt, -1, 1, 52);
        std::vector<double> gref;
        auto yref = adaptive_ref(xv, xs, Ho, Wo, gv, &gref);
        Tensor x = make(xv, xs, dt, strided);
        Tensor y = adaptive_avg_pool2d(x, os);
        EXPECT_EQ(y.shape(), Shape({2, 3, Ho, Wo})) << what;
        EXPECT_EQ(y.dtype(), dt) << what;
        expect_close(y, yref, "adaptive_avg_pool2d " + what);
        Tensor g = adaptive_avg_pool2d_grad(make(gv, {2, 3, Ho, Wo}, dt, strided), x);
        EXPECT_EQ(g.shape(), Shape(xs)) << what;
        expect_close(g, gref, "adaptive_avg_pool2d_grad " + what);
      }
}

TEST(PoolOps, AdaptiveGradMatchesFiniteDifferences) {
  const DType f64 = DType::kFloat64;
  const std::vector<int64_t> xs{1, 2, 5, 7};
  auto xv = random_values(numel_of(xs), f64, -1, 1, 61);
  auto gv = random_values(2 * 3 * 4, f64, -1, 1, 62);
  std::vector<double> g =
      adaptive_avg_pool2d_grad(make_tensor(gv, {1, 2, 3, 4}, f64), make_tensor(xv, Shape(xs), f64))
          .to_vector<double>();
  auto loss = [&](const std::vector<double>& v) {
    std::vector<double> y =
        adaptive_avg_pool2d(make_tensor(v, Shape(xs), f64), {3, 4}).to_vector<double>();
    double s = 0;
    for (size_t i = 0; i < y.size(); ++i) s += y[i] * gv[i];
    return s;
  };
  for (size_t i = 0; i < xv.size(); ++i) {
    auto p = xv, m = xv;
    p[i] += 1e-6, m[i] -= 1e-6;
    EXPECT_NEAR(g[i], (loss(p) - loss(m)) / 2e-6, 1e-6) << i;
  }
}

TEST(PoolOps, IndependentOfThreadCount) {
  const DType f32 = DType::kFloat32;
  Tensor x = make_tensor(random_values(4 * 8 * 9 * 10, f32, -1, 1, 7), {4, 8, 9, 10}, f32);
  const Pool2dOptions o{{3}, {2}, {1}, true};
  Tensor gy = make_tensor(random_values(4 * 8 * 5 * 6, f32, -1, 1, 8), {4, 8, 5, 6}, f32);
  const int saved = num_threads();
  std::vector<std::vector<double>> runs;
  for (int t : {1, 3}) {
    set_num_threads(t);
    for (const Tensor& r : {max_pool2d(x, o), avg_pool2d(x, o), max_pool2d_grad(gy, x, o),
                            avg_pool2d_grad(gy, x, o), adaptive_avg_pool2d(x, {4, 3})})
      runs.push_back(r.to_vector<double>());
  }
  set_num_threads(saved);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(runs[i], runs[i + 5]) << "result " << i;
}

// ---- backward rules ----------------------------------------------------------------------------

// Calls an op's backward rule directly: it must produce the gradient ops' results.
std::vector<Tensor> run_backward(OpId id, std::vector<Tensor> inputs, const Attrs& attrs,
                                 const Tensor& out, const Tensor& gy) {
  const OpDef& def = op_def(id);
  EXPECT_NE(def.backward, nullptr) << def.name;
  if (!def.backward) return {};
  std::vector<Tensor> outs{out}, gys{gy};
  return def.backward(BackwardArgs{inputs, outs, gys, attrs});
}

TEST(ConvOps, BackwardRulesUseTheGradientOps) {
  const DType f64 = DType::kFloat64;
  const ConvCase& c = conv_cases()[3];
  Tensor x = make_tensor(random_values(numel_of(c.xs), f64, -1, 1, 71), Shape(c.xs), f64);
  Tensor w = make_tensor(random_values(numel_of(c.ws), f64, -1, 1, 72), Shape(c.ws), f64);
  Tensor y = conv2d(x, w, c.opt);
  Tensor gy = make_tensor(random_values(y.numel(), f64, -1, 1, 73), y.shape(), f64);
  auto g = run_backward(OpId::k_conv2d, {x, w},
                        Attrs{c.opt.stride, c.opt.padding, c.opt.dilation, int64_t{c.opt.groups}},
                        y, gy);
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(max_abs_diff(g[0], conv2d_grad_input(gy, w, c.xs, c.opt)), 0.0);
  EXPECT_EQ(max_abs_diff(g[1], conv2d_grad_weight(gy, x, c.ws, c.opt)), 0.0);

  const Pool2dOptions o{{3}, {2}, {1}, true};
  const Attrs pa{o.kernel, o.stride, o.padding, o.ceil_mode};
  Tensor px = make_tensor(random_values(2 * 2 * 7 * 6, f64, -1, 1, 74), {2, 2, 7, 6}, f64);
  Tensor py = max_pool2d(px, o);
  Tensor pg = make_tensor(random_values(py.numel(), f64, -1, 1, 75), py.shape(), f64);
  g = run_backward(OpId::k_max_pool2d, {px}, pa, py, pg);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(max_abs_diff(g[0], max_pool2d_grad(pg, px, o)), 0.0);
  g = run_backward(OpId::k_avg_pool2d, {px}, pa, avg_pool2d(px, o), pg);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(max_abs_diff(g[0], avg_pool2d_grad(pg, px, o)), 0.0);
  Tensor ay = adaptive_avg_pool2d(px, {3, 2});
  Tensor ag = make_tensor(random_values(ay.numel(), f64, -1, 1, 76), ay.shape(), f64);
  g = run_backward(OpId::k_adaptive_avg_pool2d, {px}, Attrs{std::vector<int64_t>{3, 2}}, ay, ag);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(max_abs_diff(g[0], adaptive_avg_pool2d_grad(ag, px)), 0.0);
}

// Through value_and_grad: the conv and pool rules chained with the sum and mul rules gradcheck uses.
TEST(ConvOps, GradcheckThroughAutograd) {
  const DType f64 = DType::kFloat64;
  auto rnd = [&](std::vector<int64_t> s, uint32_t seed) {
    return make_tensor(random_values(numel_of(s), f64, -1, 1, seed), Shape(s), f64);
  };
  const Conv2dOptions co{{2, 1}, {1}, {1, 2}, 2};
  gradcheck([&](const std::vector<Tensor>& in) { return conv2d(in[0], in[1], co); },
            {rnd({1, 4, 5, 6}, 1), rnd({4, 2, 2, 2}, 2)}, {}, 1e-6, 1e-6, "conv2d");
  const Pool2dOptions po{{3}, {2}, {1}, true};
  gradcheck([&](const std::vector<Tensor>& in) { return max_pool2d(in[0], po); },
            {rnd({1, 2, 5, 6}, 3)}, {}, 1e-6, 1e-6, "max_pool2d");
  gradcheck([&](const std::vector<Tensor>& in) { return avg_pool2d(in[0], po); },
            {rnd({1, 2, 5, 6}, 4)}, {}, 1e-6, 1e-6, "avg_pool2d");
  gradcheck(
      [&](const std::vector<Tensor>& in) {
        return adaptive_avg_pool2d(in[0], {2, 4});
      },
      {rnd({1, 2, 5, 6}, 5)}, {}, 1e-6, 1e-6, "adaptive_avg_pool2d");
}

// ---- errors ----------------------------------------------------------------------------------

TEST(ConvOps, Errors) {
  Tensor x = zeros({1, 4, 5, 5}), w = zeros({2, 4, 3, 3});
  const ErrorCode kShape = ErrorCode::kShape, kValue = ErrorCode::kValue,
                  kDType = ErrorCode::kDType;
  expect_error([&] { conv2d(zeros({4, 5, 5}), w); }, kShape, "conv2d", "4-D");
  expect_error([&] { conv2d(x, zeros({2, 4, 3})); }, kShape, "conv2d", "4-D");
  expect_error(
      [&] {
        conv2d(x, zeros({2, 3, 3, 3}));
      },
      kShape, "conv2d", "input channels per group");
  expect_error(
      [&] {
        conv2d(x, zeros({2, 4, 3, 3}), {.groups = 3});
      },
      kShape, "conv2d", "divisible by groups = 3");
  expect_error(
      [&] {
        conv2d(x, zeros({3, 2, 3, 3}), {.groups = 2});
      },
      kShape, "conv2d", "3 output channels");
  expect_error([&] { conv2d(x, w, {.groups = 0}); }, kValue, "conv2d", "groups must be >= 1");
  expect_error([&] { conv2d(x, w, {.stride = {0, 1}}); }, kValue, "conv2d", "stride [0, 1]");
  expect_error([&] { conv2d(x, w, {.stride = {1, 1, 1}}); }, kValue, "conv2d", "2 values");
  expect_error([&] { conv2d(x, w, {.padding = {-1}}); }, kValue, "conv2d", "padding [-1]");
  expect_error([&] { conv2d(x, w, {.dilation = {0}}); }, kValue, "conv2d", "dilation [0]");
  expect_error(
      [&] {
        conv2d(x, zeros({2, 4, 6, 3}));
      },
      kShape, "conv2d", "larger than the padded input 5x5");
  expect_error([&] { conv2d(x, w, {.dilation = {3}}); }, kShape, "conv2d",
               "larger than the padded input");
  expect_error(
      [&] {
        conv2d(zeros({1, 4, 5, 5}, DType::kInt32), zeros({2, 4, 3, 3}, DType::kInt32));
      },
      kDType, "conv2d", "int32");
  expect_error([&] { conv2d(x, w, {.stride = {int64_t{1} << 40}}); }, kValue, "conv2d", "stride");
  expect_error(
      [&] {
        conv2d_grad_input(zeros({1, 2, 4, 3}), w, {1, 4, 5, 5});
      },
      kShape, "conv2d_grad_input", "[1, 2, 3, 3]");
  expect_error(
      [&] {
        conv2d_grad_input(zeros({1, 2, 3, 3}), w, {1, 4, 5});
      },
      kValue, "conv2d_grad_input", "input_shape");
  expect_error(
      [&] {
        conv2d_grad_input(zeros({1, 2, 3, 3}), w, {1, 4, -5, 5});
      },
      kValue, "conv2d_grad_input", "input_shape");
  expect_error(
      [&] {
        conv2d_grad_weight(zeros({1, 3, 3, 3}), x, {2, 4, 3, 3});
      },
      kShape, "conv2d_grad_weight", "grad_out");
  expect_error(
      [&] {
        conv2d_grad_weight(zeros({1, 2, 3, 3}), x, {2, 4, 3, 3, 1});
      },
      kValue, "conv2d_grad_weight", "weight_shape");
}

TEST(PoolOps, Errors) {
  Tensor x = zeros({1, 2, 5, 5});
  const ErrorCode kShape = ErrorCode::kShape, kValue = ErrorCode::kValue,
                  kDType = ErrorCode::kDType;
  expect_error([&] { max_pool2d(zeros({2, 5, 5})); }, kShape, "max_pool2d", "4-D");
  expect_error([&] { avg_pool2d(x, {.kernel = {0, 2}}); }, kValue, "avg_pool2d", "kernel [0, 2]");
  expect_error([&] { max_pool2d(x, {.kernel = {2}, .stride = {0}}); }, kValue, "max_pool2d",
               "stride [0]");
  expect_error([&] { max_pool2d(x, {.kernel = {3}, .padding = {2}}); }, kValue, "max_pool2d",
               "at most half");
  expect_error(
      [&] {
        avg_pool2d(x, {.kernel = {6, 2}});
      },
      kShape, "avg_pool2d", "larger than the padded input");
  expect_error(
      [&] {
        max_pool2d(zeros({1, 2, 0, 5}), {.kernel = {2}, .padding = {1}});
      },
      kShape, "max_pool2d", "empty spatial axis");
  expect_error(
      [&] {
        max_pool2d(zeros({1, 2, 5, 5}, DType::kInt64));
      },
      kDType, "max_pool2d", "int64");
  expect_error(
      [&] {
        max_pool2d_grad(zeros({1, 2, 3, 3}), x);
      },
      kShape, "max_pool2d_grad", "[1, 2, 2, 2]");
  expect_error(
      [&] {
        avg_pool2d_grad(zeros({1, 2, 2, 2}, DType::kInt32), zeros({1, 2, 5, 5}, DType::kInt32));
      },
      kDType, "avg_pool2d_grad", "floating");
  expect_error(
      [&] {
        adaptive_avg_pool2d(x, {0, 2});
      },
      kValue, "adaptive_avg_pool2d", "output_size");
  expect_error(
      [&] {
        adaptive_avg_pool2d(x, {1, 2, 3});
      },
      kValue, "adaptive_avg_pool2d", "output_size");
  expect_error(
      [&] {
        adaptive_avg_pool2d(zeros({1, 2, 0, 3}), {1});
      },
      kShape, "adaptive_avg_pool2d", "empty");
  expect_error(
      [&] {
        adaptive_avg_pool2d_grad(zeros({2, 2, 1, 1}), x);
      },
      kShape, "adaptive_avg_pool2d_grad", "grad_out");
}

}  // namespace
}  // namespace spore::test
