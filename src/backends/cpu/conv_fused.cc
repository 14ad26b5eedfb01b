// CPU kernel of fused_conv2d (x, weight, bias; clamp_min, clamp_max): the convolution Lite
// substitutes at load for conv2d, its folded BatchNorm and its activation (NOTE [Lite executor]).
// One pass over the output instead of three or four:
// * depthwise 3x3, 5x5 or 7x7 with "same" padding, stride 1 or 2 (MobileNetV2's every second
//   layer, MobileNetV3's and PP-LCNet's 5x5), and dense ones over at most 4 input channels (a
//   stem): the plane kernel of the current SIMD level (dwconv.h), bias and clamp applied in
//   registers;
// * everything else: conv2d's own path (oneDNN for float32, the direct loops when it refuses and
//   for float64; the half types in float32, rounded once), then bias and clamp in one sweep per
//   output plane while it is in cache.
// A float32 node's epilogue (NOTE [Convolution epilogues]) runs on each output plane right after
// its bias and clamp, in place, with the elementwise kernels' own loops (FusedRunner).
#include <algorithm>
#include <cmath>
#include <optional>
#include <type_traits>
#include <vector>

#include "conv_internal.h"
#include "cpu_features.h"
#include "cpu_kernels.h"
#include "dwconv.h"
#include "fused_runner.h"
#include "ops/fused_program.h"
#include "spore/half.h"
#include "thread_pool.h"

namespace spore::cpu {

DwConvFn dwconv() { return level_function(&dwconv_generic, &dwconv_avx2, &dwconv_avx512); }

namespace {

// Elements of a tensor of any layout, in row-major order, as C (no op is dispatched from inside
// a kernel, so strided inputs are gathered here).
template <class S, class C>
std::vector<C> gathered(const Tensor& t) {
  std::vector<C> out((size_t)t.numel());
  const S* p = static_cast<const S*>(t.data_ptr());
  const Shape &s = t.shape(), &st = t.strides();
  const int nd = t.ndim();
  std::vector<int64_t> idx((size_t)nd, 0);
  for (int64_t i = 0; i < t.numel(); ++i) {
    int64_t off = 0;
    for (int d = 0; d < nd; ++d) off += idx[(size_t)d] * st[d];
    out[(size_t)i] = (C)(float)p[off];
    if constexpr (std::is_same_v<S, double>) out[(size_t)i] = (C)p[off];
    for (int d = nd - 1; d >= 0 && ++idx[(size_t)d] == s[d]; --d) idx[(size_t)d] = 0;
  }
  return out;
}

// A contiguous float / double view of t: its own data when it already is one.
template <class S, class C>
const C* as_contiguous(const Tensor& t, std::vector<C>& store) {
  if constexpr (std::is_same_v<S, C>)
    if (t.is_contiguous()) return static_cast<const C*>(t.data_ptr());
  store = gathered<S, C>(t);
  return store.data();
}

// k x k (3, 5 or 7), padding k / 2, stride 1 or 2: the plane kernel's geometry.
bool plane_kernel(const ops::ConvGeometry& g) {
  return g.kh == g.kw && dwconv_kernel_size(g.kh) && g.ph == g.kh / 2 && g.pw == g.kw / 2 && g.dh == 1 && g.dw == 1 &&
         g.sh == g.sw && (g.sh == 1 || g.sh == 2);
}
// The depthwise ones went to the direct loops before (oneDNN is slow for depthwise in plain
// layouts): PP-LCNet's 5x5 at 14x14 ran at 3 GFLOP/s there.
bool depthwise_plane(const ops::ConvGeometry& g) { return plane_kernel(g) && g.groups == g.c && g.o == g.c; }
// A dense one over a few input channels (an image's RGB: MobileNetV2's stem), which oneDNN's
// gemm-based convolution ran at under 1 GFLOP/s here (im2col of 3 channels, DNNL_VERBOSE). Not
// when oneDNN would run it blocked: YOLOv8n's 3 -> 16 stem (stride 2, 320 x 320) took 1.23 ms
// here and 0.78 ms there, its reorders counted.
constexpr int64_t kFewChannels = 4;
bool few_channels_plane(const ops::ConvGeometry& g) {
  return plane_kernel(g) && g.groups == 1 && g.c <= kFewChannels && !conv_blocked_forward(g);
}

// The epilogue program and its one-element inputs (%1...); %0 is the output being finished.
struct Epilogue {
  FusedRunner runner;
  std::vector<const char*> ptr;  // [0] set per block, then the one-element inputs
  std::vector<int64_t> stride;   // 1, then 0 for each one-element input

  // Runs the program over n floats at y, in place, block by block. Called once per task on the
  // task's run of whole output planes (contiguous), which it has just written: small planes
  // (10 x 10) would otherwise pay the per-call set-up per plane.
  void apply(float* y, int64_t n) const {
    char* slots = fused_scratch(std::max(1, runner.slots()) * kFusedSlotBytes);
    thread_local std::vector<const char*> p;
    p = ptr;
    for (int64_t b = 0; b < n; b += kFusedBlock) {
      p[0] = reinterpret_cast<const char*>(y + b);
      runner.run_block(p.data(), stride.data(), y + b, std::min(kFusedBlock, n - b), slots);
    }
  }
};

template <class C>
void bias_clamp(const ops::ConvGeometry& g, const C* bias, C lo, C hi, C* y, const Epilogue* epilogue = nullptr) {
  const int64_t plane = g.ho * g.wo;
  parallel_for(g.n * g.o, std::max<int64_t>(1, 32768 / std::max<int64_t>(1, plane)), [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      C* p = y + t * plane;
      const C bv = bias[t % g.o];
      for (int64_t i = 0; i < plane; ++i) p[i] = std::min(std::max(p[i] + bv, lo), hi);
    }
    if constexpr (std::is_same_v<C, float>)
      if (epilogue) epilogue->apply(y + b * plane, (e - b) * plane);
  });
}

// w_storage: the storage w lies in, when w is the weight tensor's own memory (NOTE [Derived forms]).
void run_f32(const ops::ConvGeometry& g, const float* x, const float* w, const float* bias, float lo, float hi,
             float* y, const Epilogue* epilogue = nullptr, const Storage* w_storage = nullptr) {
  const int k = (int)g.kh;
  const int64_t taps = g.kh * g.kw, zeros = g.w + g.kw - 1;
  if (depthwise_plane(g)) {
    const DwConvFn fn = dwconv();
    const int64_t plane_in = g.h * g.w, plane_out = g.ho * g.wo;
    parallel_for(g.n * g.c, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, plane_out * taps)), [&](int64_t b, int64_t e) {
      thread_local std::vector<float> zero;
      if ((int64_t)zero.size() < zeros) zero.assign((size_t)zeros, 0.0f);
      for (int64_t t = b; t < e; ++t) {
        const int64_t c = t % g.c;
        fn(x + t * plane_in, w + c * taps, k, bias[c], lo, hi, y + t * plane_out, g.h, g.w, g.ho, g.wo, (int)g.sh,
           false, zero.data());
      }
      if (epilogue) epilogue->apply(y + b * plane_out, (e - b) * plane_out);
    });
    return;
  }
  if (few_channels_plane(g)) {  // per (n, o) plane: the input channels' planes summed in place, clamped at the last
    const DwConvFn fn = dwconv();
    const int64_t plane_in = g.h * g.w, plane_out = g.ho * g.wo;
    parallel_for(g.n * g.o, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, plane_out * taps * g.c)), [&](int64_t b, int64_t e) {
      thread_local std::vector<float> zero;
      if ((int64_t)zero.size() < zeros) zero.assign((size_t)zeros, 0.0f);
      for (int64_t t = b; t < e; ++t) {
        const int64_t n = t / g.o, o = t % g.o;
        for (int64_t c = 0; c < g.c; ++c) {
          const bool last = c + 1 == g.c;
          fn(x + (n * g.c + c) * plane_in, w + (o * g.c + c) * taps, k, bias[o], last ? lo : -INFINITY,
             last ? hi : INFINITY, y + t * plane_out, g.h, g.w, g.ho, g.wo, (int)g.sh, c > 0, zero.data());
        }
      }
      if (epilogue) epilogue->apply(y + b * plane_out, (e - b) * plane_out);
    });
    return;
  }
  // oneDNN without its bias and post-ops: with either, the gemm-based implementation it picks
  // for plain layouts ran 1.3-9x slower per convolution than without (DNNL_VERBOSE, MobileNetV2
  // at 224x224), while the sweep below costs one pass over an output that is still in cache.
  const bool depthwise = g.groups > 1 && g.cg() == 1;  // oneDNN is slow there (conv_kernels.cc)
  if (!conv_pointwise_gemm(g, x, w, y) && !conv_im2col_gemm(g, x, w, y) && (depthwise || !conv_dnnl(ConvPass::kForward, g, false, x, w, y, w_storage)))
    conv_direct<float>(ConvPass::kForward, g, x, w, y);
  bias_clamp<float>(g, bias, lo, hi, y, epilogue);
}

// The node's epilogue, or none (infer_fused_conv2d has checked it).
std::optional<Epilogue> epilogue_of(const KernelCall& c) {
  if (c.attrs.size() < 7 || c.attrs.s(6).empty()) return std::nullopt;
  ops::FusedProgram p = ops::parse_fused_program(c.attrs.s(6));
  std::vector<DType> dtypes{DType::kFloat32};
  std::vector<const char*> ptr{nullptr};
  for (size_t k = 3; k < c.inputs.size(); ++k) {
    dtypes.push_back(c.inputs[k].dtype());
    ptr.push_back(static_cast<const char*>(c.inputs[k].data_ptr()));
  }
  ops::type_fused_program(p, dtypes);
  std::vector<int64_t> stride(ptr.size(), 0);
  stride[0] = 1;
  return Epilogue{FusedRunner(std::move(p)), std::move(ptr), std::move(stride)};
}

template <class T>
void fused_conv_kernel(const KernelCall& c) {
  const ops::ConvGeometry g = ops::conv_geometry(c.inputs[0].shape(), c.inputs[1].shape(), c.attrs, 0);
  const Tensor& out = c.outputs[0];
  if (out.numel() == 0) return;
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;  // the compute type
  const C lo = (C)c.attrs.f(4), hi = (C)c.attrs.f(5);
  std::vector<C> sx, sw, sb;
  const C* b = as_contiguous<T, C>(c.inputs[2], sb);
  if (c.inputs[0].numel() == 0 || c.inputs[1].numel() == 0) {  // empty sums: the bias alone
    std::vector<C> zeros((size_t)out.numel(), C(0));
    std::optional<Epilogue> epilogue;
    if constexpr (std::is_same_v<T, float>) epilogue = epilogue_of(c);
    bias_clamp<C>(g, b, lo, hi, zeros.data(), epilogue ? &*epilogue : nullptr);
    T* po = static_cast<T*>(out.data_ptr());
    for (int64_t i = 0; i < out.numel(); ++i) po[i] = T(zeros[(size_t)i]);
    return;
  }
  const C* x = as_contiguous<T, C>(c.inputs[0], sx);
  const C* w = as_contiguous<T, C>(c.inputs[1], sw);
  if constexpr (std::is_same_v<T, C>) {
    T* y = static_cast<T*>(out.data_ptr());
    if constexpr (std::is_same_v<T, float>) {
      const std::optional<Epilogue> epilogue = epilogue_of(c);
      const Tensor& wt = c.inputs[1];
      const Storage* ws = w == static_cast<const float*>(wt.data_ptr()) ? wt.storage() : nullptr;
      run_f32(g, x, w, b, lo, hi, y, epilogue ? &*epilogue : nullptr, ws);
    } else {
      conv_direct<double>(ConvPass::kForward, g, x, w, y);
      bias_clamp<double>(g, b, lo, hi, y);
    }
  } else {  // float16 / bfloat16: computed in float32, rounded once
    std::vector<float> y((size_t)out.numel());
    run_f32(g, x, w, b, lo, hi, y.data());
    T* po = static_cast<T*>(out.data_ptr());
    parallel_for(out.numel(), 1 << 16, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) po[i] = T(y[(size_t)i]);
    });
  }
}

}  // namespace

void register_fused_conv_kernels() {
  register_kernel(OpId::k_fused_conv2d, kCpuBackend, DType::kFloat16, &fused_conv_kernel<Half>);
  register_kernel(OpId::k_fused_conv2d, kCpuBackend, DType::kBFloat16, &fused_conv_kernel<BFloat16>);
  register_kernel(OpId::k_fused_conv2d, kCpuBackend, DType::kFloat32, &fused_conv_kernel<float>);
  register_kernel(OpId::k_fused_conv2d, kCpuBackend, DType::kFloat64, &fused_conv_kernel<double>);
}

}  // namespace spore::cpu
