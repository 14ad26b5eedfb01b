// CPU kernels of the elementwise family: one kernel function per kind of op, which picks the
// inner loop for the op and dtype at the current SIMD level (NOTE [Elementwise loops]) and
// drives it over the operands' layout (NOTE [Elementwise iteration]).
#include "cpu_features.h"
#include "cpu_kernels.h"
#include "elementwise_iter.h"
#include "elementwise_loops.h"

namespace spore::cpu {

namespace ew {
const LoopTable& loops() {
  // A level's fill function is itself compiled for that level, so it only runs on CPUs that have
  // it; lesser machines get copies of the best table they can run.
  static const LoopTable* tables = [] {
    auto* t = new LoopTable[3];
    fill_loops_generic(t[0]);
    t[1] = t[0];
    if (best_simd_level() >= SimdLevel::kAvx2) fill_loops_avx2(t[1]);
    t[2] = t[1];
    if (best_simd_level() >= SimdLevel::kAvx512) fill_loops_avx512(t[2]);
    return t;
  }();
  return tables[(int)simd_level()];
}
}  // namespace ew

namespace {

using ew::loops;

// True when `t` can be walked as a flat array against an output of n elements: either it has
// the output's elements in the same order (contiguous, same count) or it is a single element.
// Sets the run stride (1 or 0).
inline bool flat_operand(const Tensor& t, int64_t n, int64_t& stride) {
  const TensorImpl& i = *t.impl();
  int64_t m = i.shape.numel();
  if (m == 1) {
    stride = 0;
    return true;
  }
  stride = 1;
  return m == n && i.contiguous;
}

// Converts `in` into `out` (same shape, any strides on both sides, any dtypes).
void cast_into(const Tensor& in, const Tensor& out) {
  ew::CastLoop fn = loops().cast[(int)in.dtype()][(int)out.dtype()];
  const int64_t n = out.numel();
  int64_t si, so;
  if (flat_operand(in, n, si) && flat_operand(out, n, so) && so == 1) {
    char* ip = static_cast<char*>(in.data_ptr());
    char* op = static_cast<char*>(out.data_ptr());
    const int64_t ie = (int64_t)in.itemsize(), oe = (int64_t)out.itemsize();
    run_flat(n, [&](int64_t b, int64_t e) { fn(ip + b * si * ie, si, op + b * oe, 1, e - b); });
    return;
  }
  const Tensor* ops[2] = {&out, &in};
  StridedIter<2>(out.shape(), ops).run([&](char* const* p, const int64_t* s, int64_t n) {
    fn(p[1], s[1], p[0], s[0], n);
  });
}

// A bool tensor with `t`'s truth values (t itself when it is bool already).
Tensor as_bool(const Tensor& t) {
  if (t.dtype() == DType::kBool) return t;
  Tensor out = Tensor::empty(t.shape(), DType::kBool, t.device());
  cast_into(t, out);
  return out;
}

void run_binary(ew::BinaryLoop fn, const Tensor& a, const Tensor& b, const Tensor& out) {
  const int64_t n = out.numel();
  int64_t sa, sb;
  if (flat_operand(a, n, sa) && flat_operand(b, n, sb)) {
    char* ap = static_cast<char*>(a.data_ptr());
    char* bp = static_cast<char*>(b.data_ptr());
    char* op = static_cast<char*>(out.data_ptr());
    const int64_t ae = (int64_t)a.itemsize() * sa, be = (int64_t)b.itemsize() * sb;
    const int64_t oe = (int64_t)out.itemsize();
    if (n <= kElementwiseGrain) return fn(ap, sa, bp, sb, op, n);  // the eager fast path
    run_flat(n, [&](int64_t s, int64_t e) { fn(ap + s * ae, sa, bp + s * be, sb, op + s * oe, e - s); });
    return;
  }
  const Tensor* ops[3] = {&out, &a, &b};
  StridedIter<3>(out.shape(), ops).run([&](char* const* p, const int64_t* s, int64_t m) {
    fn(p[1], s[1], p[2], s[2], p[0], m);
  });
}

void binary_kernel(const KernelCall& c) {
  const Tensor& a = c.inputs[0];
  ew::BinaryLoop fn = loops().binary[(int)c.def.id][(int)a.dtype()];
  run_binary(fn, a, c.inputs[1], c.outputs[0]);
}

// logical_and / logical_or: inputs of any dtypes, read as truth values.
void logical_kernel(const KernelCall& c) {
  ew::BinaryLoop fn = loops().binary[(int)c.def.id][(int)DType::kBool];
  run_binary(fn, as_bool(c.inputs[0]), as_bool(c.inputs[1]), c.outputs[0]);
}

void unary_kernel(const KernelCall& c) {
  const Tensor& x = c.inputs[0];
  const Tensor& out = c.outputs[0];
  ew::UnaryLoop fn = loops().unary[(int)c.def.id][(int)x.dtype()];
  const int64_t n = out.numel();
  int64_t sx;
  if (flat_operand(x, n, sx)) {
    char* xp = static_cast<char*>(x.data_ptr());
    char* op = static_cast<char*>(out.data_ptr());
    const int64_t xe = (int64_t)x.itemsize() * sx, oe = (int64_t)out.itemsize();
    run_flat(n, [&](int64_t s, int64_t e) { fn(xp + s * xe, sx, op + s * oe, e - s); });
    return;
  }
  const Tensor* ops[2] = {&out, &x};
  StridedIter<2>(out.shape(), ops).run([&](char* const* p, const int64_t* s, int64_t m) {
    fn(p[1], s[1], p[0], m);
  });
}

void where_kernel(const KernelCall& c) {
  const Tensor cond = as_bool(c.inputs[0]);
  const Tensor& x = c.inputs[1];
  const Tensor& y = c.inputs[2];
  const Tensor& out = c.outputs[0];
  ew::WhereLoop fn = loops().where[(int)x.dtype()];
  const Tensor* ops[4] = {&out, &cond, &x, &y};
  StridedIter<4>(out.shape(), ops).run([&](char* const* p, const int64_t* s, int64_t m) {
    fn(p[1], s[1], p[2], s[2], p[3], s[3], p[0], m);
  });
}

// cast, copy, and assign (same dtype, into a possibly strided view: Tensor::copy_).
void cast_kernel(const KernelCall& c) { cast_into(c.inputs[0], c.outputs[0]); }
// assign(dst, src) writes input 0 in place (same dtype and shape, checked by its inference).
void assign_kernel(const KernelCall& c) { cast_into(c.inputs[1], c.inputs[0]); }

}  // namespace

void register_elementwise_kernels() {
  const ew::LoopTable& t = loops();
  // Every op with a loop in some dtype gets the kernel for its kind (NOTE [Loops keyed by op]).
  for (int op = 0; op < kNumOps; ++op) {
    const OpId id = (OpId)op;
    const bool logical = id == OpId::k_logical_and || id == OpId::k_logical_or;
    for (DType d : kAllDTypes) {
      if (t.binary[op][(int)d]) register_kernel(id, kCpuBackend, d, logical ? &logical_kernel : &binary_kernel);
      if (t.unary[op][(int)d]) register_kernel(id, kCpuBackend, d, &unary_kernel);
    }
  }
  for (DType d : kAllDTypes) {
    register_kernel(OpId::k_where, kCpuBackend, d, &where_kernel);
    register_kernel(OpId::k_cast, kCpuBackend, d, &cast_kernel);
    register_kernel(OpId::k_copy, kCpuBackend, d, &cast_kernel);
    register_kernel(OpId::k_assign, kCpuBackend, d, &assign_kernel);
  }
}

}  // namespace spore::cpu
