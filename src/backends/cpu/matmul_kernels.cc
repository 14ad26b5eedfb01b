// CPU kernels of the matmul family: picks a path per dtype and size (NOTE [Matmul paths]).
//
// NOTE [Matmul paths]
// * float32: oneDNN (matmul_dnnl.cc), reading strided operands in place; an operand whose
//   matrices have no unit stride is packed first.
// * float16 / bfloat16: converted to float32 (exactly), multiplied by the float32 path, and
//   rounded once at the end: float32 accumulation, and no loss from a float16 -> bfloat16
//   detour. (oneDNN 2.6 has no bfloat16 matmul on CPUs without AVX-512, and no float16 at all.)
// * float64 and integers: the direct kernels (matmul_direct.cc).
// * Small problems of any dtype (<= kMatmulDirectMaxMacs multiply-adds): the direct kernels,
//   since oneDNN's fixed per-call cost is larger than the work there.
#include <cstring>
#include <type_traits>

#include "thread_pool.h"
#include "cpu_kernels.h"
#include "matmul_geometry.h"

namespace spore::cpu {

namespace {

// Strides of extent-1 axes are free: pick ones that make the layout checks see a plain matrix.
void normalise(int64_t rows, int64_t cols, int64_t& rs, int64_t& cs) {
  if (cols == 1) cs = 1;
  if (rows == 1) rs = cs == 1 ? cols : 1;
}

template <typename S, typename D>
void gather(const Tensor& t, const Tensor& out) {
  const Shape& shape = t.shape();
  const Shape& strides = t.strides();
  const int nd = shape.ndim();
  const int64_t inner = nd ? shape[nd - 1] : 1;
  const int64_t inner_stride = nd ? strides[nd - 1] : 1;
  const int64_t rows = t.numel() / inner;
  const S* src = static_cast<const S*>(t.data_ptr());
  D* dst = static_cast<D*>(out.data_ptr());
  parallel_for(rows, std::max<int64_t>(1, 16384 / inner), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t off = 0, idx = r;
      for (int i = nd - 2; i >= 0; --i) {
        off += (idx % shape[i]) * strides[i];
        idx /= shape[i];
      }
      const S* s = src + off;
      D* d = dst + r * inner;
      for (int64_t j = 0; j < inner; ++j) {
        if constexpr (std::is_same_v<S, D>) d[j] = s[j * inner_stride];
        else d[j] = D((float)s[j * inner_stride]);
      }
    }
  });
}

template <typename D>
void round_from_f32(const Tensor& src, const Tensor& dst) {
  const float* s = src.data<float>();
  D* d = dst.data<D>();
  parallel_for(src.numel(), 1 << 15, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) d[i] = D(s[i]);
  });
}

bool plain_a(const MatmulGeometry& g) { return matmul_plain(g.m, g.k, g.a.rs, g.a.cs); }
bool plain_b(const MatmulGeometry& g) { return matmul_plain(g.k, g.n, g.b.rs, g.b.cs); }

void matmul_kernel(const KernelCall& call) {
  const Tensor& a = call.inputs[0];
  const Tensor& b = call.inputs[1];
  const Tensor& out = call.outputs[0];
  if (out.numel() == 0) return;
  if (a.shape()[a.ndim() - 1] == 0) {  // K = 0: empty sums
    std::memset(out.data_ptr(), 0, out.nbytes());
    return;
  }
  MatmulGeometry g = matmul_geometry(a, b, out);
  const DType dt = out.dtype();
  const bool floating32 = dt == DType::kFloat32 || is_low_precision(dt);
  if (!floating32 || g.m * g.n * g.k * g.batch_count() <= kMatmulDirectMaxMacs) {
    matmul_direct(g);
    return;
  }
  if (matmul_dnnl(g)) return;  // float32; bfloat16 where the CPU multiplies it natively
  if (dt == DType::kFloat32) {
    const Tensor ac = plain_a(g) ? a : matmul_contiguous(a, DType::kFloat32);
    const Tensor bc = plain_b(g) ? b : matmul_contiguous(b, DType::kFloat32);
    g = matmul_geometry(ac, bc, out);
    if (!matmul_dnnl(g)) matmul_direct(g);
    return;
  }
  const Tensor a32 = matmul_contiguous(a, DType::kFloat32);
  const Tensor b32 = matmul_contiguous(b, DType::kFloat32);
  const Tensor o32 = Tensor::empty(out.shape(), DType::kFloat32, out.device());
  g = matmul_geometry(a32, b32, o32);
  if (!matmul_dnnl(g)) matmul_direct(g);
  if (dt == DType::kFloat16) round_from_f32<Half>(o32, out);
  else round_from_f32<BFloat16>(o32, out);
}

}  // namespace

MatmulGeometry matmul_geometry(const Tensor& a, const Tensor& b, const Tensor& out) {
  MatmulGeometry g;
  g.dtype = out.dtype();
  g.out = out.data_ptr();
  g.a.data = a.data_ptr();
  g.b.data = b.data_ptr();
  const Shape &as = a.shape(), &ast = a.strides(), &bs = b.shape(), &bst = b.strides();
  const int na = a.ndim(), nb = b.ndim();
  if (na == 1) {
    g.m = 1, g.k = as[0], g.a.cs = ast[0], g.a.rs = 0;
  } else {
    g.m = as[na - 2], g.k = as[na - 1], g.a.rs = ast[na - 2], g.a.cs = ast[na - 1];
  }
  if (nb == 1) {
    g.n = 1, g.b.rs = bst[0], g.b.cs = 0;
  } else {
    g.n = bs[nb - 1], g.b.rs = bst[nb - 2], g.b.cs = bst[nb - 1];
  }
  normalise(g.m, g.k, g.a.rs, g.a.cs);
  normalise(g.k, g.n, g.b.rs, g.b.cs);

  // Batch axes, aligned to the right; broadcast axes get stride 0, extent-1 output axes vanish.
  const int ra = std::max(na - 2, 0), rb = std::max(nb - 2, 0), r = std::max(ra, rb);
  std::vector<int64_t> ext, sa, sb;
  for (int i = 0; i < r; ++i) {
    const int ia = i - (r - ra), ib = i - (r - rb);
    const int64_t da = ia >= 0 ? as[ia] : 1, db = ib >= 0 ? bs[ib] : 1;
    const int64_t d = da == 1 ? db : da;
    if (d == 1) continue;
    ext.push_back(d);
    sa.push_back(da == 1 ? 0 : ast[ia]);
    sb.push_back(db == 1 ? 0 : bst[ib]);
  }
  // Merge axis i into the next one when both operands step through them as one axis (the output
  // is contiguous, so it always does).
  for (int i = (int)ext.size() - 1; i >= 0; --i) {
    if (!g.batch.empty() && sa[i] == g.a.batch_strides.front() * g.batch.front() &&
        sb[i] == g.b.batch_strides.front() * g.batch.front()) {
      g.batch.front() *= ext[i];
      continue;
    }
    g.batch.insert(g.batch.begin(), ext[i]);
    g.a.batch_strides.insert(g.a.batch_strides.begin(), sa[i]);
    g.b.batch_strides.insert(g.b.batch_strides.begin(), sb[i]);
  }
  return g;
}

Tensor matmul_contiguous(const Tensor& t, DType to) {
  const Tensor out = Tensor::empty(t.shape(), to, t.device());
  if (t.numel() == 0) return out;
  visit_dtype(t.dtype(), [&](auto tag) {
    using S = decltype(tag);
    if (to == t.dtype()) return gather<S, S>(t, out);
    if constexpr (std::is_same_v<S, Half> || std::is_same_v<S, BFloat16> || std::is_same_v<S, float>)
      if (to == DType::kFloat32) return gather<S, float>(t, out);
    throw Error(ErrorCode::kInternal, std::string("matmul: no conversion from ") +
                                          dtype_name(t.dtype()) + " to " + dtype_name(to));
  });
  return out;
}

void register_matmul_kernels() {
  for (DType t : kAllDTypes)
    if (t != DType::kBool) register_kernel(OpId::k_matmul, kCpuBackend, t, &matmul_kernel);
}

}  // namespace spore::cpu
