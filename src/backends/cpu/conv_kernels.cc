// CPU kernels of the convolution ops (conv2d, conv2d_grad_input, conv2d_grad_weight) for the
// floating dtypes; the pooling kernels live in conv_pool.cc.
//
// * float32: oneDNN (conv_dnnl.cc), the direct loops when oneDNN refuses a problem.
// * bfloat16: oneDNN's bf16 primitives where the CPU has them (AVX-512 and newer); otherwise the
//   operands are widened to float32 and the float32 path runs (float32 accumulation either way).
// * float16: widened to float32, rounded once at the end.
// * float64: the direct loops in exact float64 (the gradcheck reference).
// Operands may be strided views: they are gathered into contiguous buffers first (converting the
// dtype in the same pass when needed). The gather is done here, not with the copy op, so that no
// op is dispatched from inside a kernel.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "conv_internal.h"
#include "thread_pool.h"
#include "cpu_kernels.h"
#include "spore/half.h"

namespace spore::cpu {

namespace {

template <class D, class S>
inline D convert(S v) {
  if constexpr (std::is_same_v<D, S>)
    return v;
  else if constexpr (std::is_same_v<D, Half> || std::is_same_v<D, BFloat16>)
    return D((float)v);
  else
    return (D)(float)v;  // Half/BFloat16 -> float
}

// Copies a 4-D tensor of element type S into contiguous memory of type D, row-major.
template <class S, class D>
void gather(const Tensor& t, D* out) {
  const S* p = static_cast<const S*>(t.data_ptr());
  const Shape &s = t.shape(), &st = t.strides();
  if (t.is_contiguous()) {
    parallel_for(t.numel(), 1 << 16, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) out[i] = convert<D>(p[i]);
    });
    return;
  }
  const int64_t plane = s[2] * s[3];
  parallel_for(s[0] * s[1], std::max<int64_t>(1, (1 << 16) / std::max<int64_t>(1, plane)),
               [&](int64_t b, int64_t e) {
                 for (int64_t q = b; q < e; ++q) {
                   const S* base = p + (q / s[1]) * st[0] + (q % s[1]) * st[1];
                   D* o = out + q * plane;
                   for (int64_t h = 0; h < s[2]; ++h)
                     for (int64_t w = 0; w < s[3]; ++w)
                       *o++ = convert<D>(base[h * st[2] + w * st[3]]);
                 }
               });
}

// A contiguous pointer to a tensor's elements in type D: the tensor itself when it already is,
// else a converted copy held in `store`.
template <class S, class D>
const D* contiguous_as(const Tensor& t, std::vector<D>& store) {
  if constexpr (std::is_same_v<S, D>)
    if (t.is_contiguous()) return static_cast<const D*>(t.data_ptr());
  store.resize((size_t)t.numel());
  gather<S>(t, store.data());
  return store.data();
}

ConvPass pass_of(OpId id) {
  return id == OpId::k_conv2d              ? ConvPass::kForward
         : id == OpId::k_conv2d_grad_input ? ConvPass::kGradInput
                                           : ConvPass::kGradWeight;
}

ops::ConvGeometry geometry_of(const KernelCall& c, ConvPass pass) {
  switch (pass) {
    case ConvPass::kForward:
      return ops::conv_geometry(c.inputs[0].shape(), c.inputs[1].shape(), c.attrs, 0);
    case ConvPass::kGradInput:
      return ops::conv_geometry(Shape(c.attrs.ints(0)), c.inputs[1].shape(), c.attrs, 1);
    case ConvPass::kGradWeight:
      return ops::conv_geometry(c.inputs[1].shape(), Shape(c.attrs.ints(0)), c.attrs, 1);
  }
  return {};
}

// The float32 computation on contiguous float operands. Depthwise problems (one input channel
// per group) go to the direct loops: in plain layouts oneDNN runs them as one tiny gemm per
// group, which measured about 3x slower than the direct loops (bench/conv_bench.cc, layer 1).
void run_f32(ConvPass pass, const ops::ConvGeometry& g, const float* a, const float* b,
             float* out) {
  const bool depthwise = g.groups > 1 && g.cg() == 1;
  if (pass == ConvPass::kForward && (conv_pointwise_gemm(g, a, b, out) || conv_im2col_gemm(g, a, b, out))) return;
  if (depthwise || !conv_dnnl(pass, g, false, a, b, out)) conv_direct<float>(pass, g, a, b, out);
}

template <class T>
void conv_kernel(const KernelCall& c) {
  const ConvPass pass = pass_of(c.def.id);
  const ops::ConvGeometry g = geometry_of(c, pass);
  const Tensor &a = c.inputs[0], &b = c.inputs[1];
  const Tensor& out = c.outputs[0];
  if (out.numel() == 0) return;
  if (a.numel() == 0 || b.numel() == 0) {  // every sum is empty
    std::memset(out.data_ptr(), 0, out.nbytes());
    return;
  }
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    std::vector<T> sa, sb;
    const T* pa = contiguous_as<T>(a, sa);
    const T* pb = contiguous_as<T>(b, sb);
    T* po = static_cast<T*>(out.data_ptr());
    if constexpr (std::is_same_v<T, float>)
      run_f32(pass, g, pa, pb, po);
    else
      conv_direct<double>(pass, g, pa, pb, po);
  } else {
    if constexpr (std::is_same_v<T, BFloat16>) {
      if (!(g.groups > 1 && g.cg() == 1) && a.is_contiguous() && b.is_contiguous() &&
          conv_dnnl(pass, g, true, a.data_ptr(), b.data_ptr(), out.data_ptr()))
        return;
    }
    std::vector<float> sa, sb, so((size_t)out.numel());
    const float* pa = contiguous_as<T>(a, sa);
    const float* pb = contiguous_as<T>(b, sb);
    run_f32(pass, g, pa, pb, so.data());
    T* po = static_cast<T*>(out.data_ptr());
    parallel_for(out.numel(), 1 << 16, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) po[i] = T(so[i]);
    });
  }
}

}  // namespace

void register_conv_kernels() {
  for (OpId id : {OpId::k_conv2d, OpId::k_conv2d_grad_input, OpId::k_conv2d_grad_weight}) {
    register_kernel(id, kCpuBackend, DType::kFloat16, &conv_kernel<Half>);
    register_kernel(id, kCpuBackend, DType::kBFloat16, &conv_kernel<BFloat16>);
    register_kernel(id, kCpuBackend, DType::kFloat32, &conv_kernel<float>);
    register_kernel(id, kCpuBackend, DType::kFloat64, &conv_kernel<double>);
  }
  register_pool_kernels();
}

}  // namespace spore::cpu
