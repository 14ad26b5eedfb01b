// Internal to the CPU conv family: the two convolution engines (oneDNN for float32/bfloat16,
// direct loops for float64 and as the fallback) and the pooling kernels' registration.
#pragma once
#include "ops/conv_geometry.h"
#include "spore/tensor.h"

namespace spore::cpu {

// Which of the three convolution computations runs. Operands (all contiguous NCHW / OIHW):
//   kForward:    a = x,      b = weight, out = y
//   kGradInput:  a = grad_y, b = weight, out = grad_x
//   kGradWeight: a = grad_y, b = x,      out = grad_weight
enum class ConvPass { kForward, kGradInput, kGradWeight };

// Runs the pass through a cached oneDNN primitive (float32, or bfloat16 when `bf16`). Returns
// false, touching nothing, when oneDNN has no implementation for the problem (the caller then
// uses the direct kernel). Needs every extent > 0. `b_storage`, when given, is the storage `b`
// lies in: a read-only one keeps the forward's blocked weights (NOTE [Derived forms]).
bool conv_dnnl(ConvPass pass, const ops::ConvGeometry& g, bool bf16, const void* a, const void* b,
               void* out, const Storage* b_storage = nullptr);

// Whether conv_dnnl runs this float32 forward in oneDNN's blocked layouts (NOTE [oneDNN
// convolution]): a convolution that does needs no hand-written path.
bool conv_blocked_forward(const ops::ConvGeometry& g);

// Direct loops (conv_direct.cc), instantiated for float and double. Writes every element of
// `out`; each output element is summed by one task in a fixed order (thread-count independent).
template <class T>
void conv_direct(ConvPass pass, const ops::ConvGeometry& g, const T* a, const T* b, T* out);

// The forward pass as im2col + one gemm per image (conv_im2col.cc) where that beats oneDNN: a
// few input channels under a large kernel. Returns false, touching nothing, for other problems.
bool conv_im2col_gemm(const ops::ConvGeometry& g, const float* x, const float* w, float* y);
// A float32 forward 1x1 convolution (stride 1, no padding, no groups) as one matmul per image,
// y[n] (o x hw) = w (o x c) . x[n] (c x hw), which matmul_dnnl cuts over the pool; false when the
// geometry is not that (conv_im2col.cc).
bool conv_pointwise_gemm(const ops::ConvGeometry& g, const float* x, const float* w, float* y);

void register_pool_kernels();  // conv_pool.cc

}  // namespace spore::cpu
