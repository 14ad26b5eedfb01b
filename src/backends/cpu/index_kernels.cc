// CPU kernels of the index family (NOTE [Index checks] in src/ops/index.cc). gather,
// index_select and embedding move whole elements, so they are written per element size and
// serve every dtype; scatter_add adds, so it is written per dtype. Indices are read as int32 or
// int64 in place, with any strides.
#include <atomic>
#include <string>
#include <type_traits>

#include "cpu_kernels.h"
#include "shape_walk.h"

namespace spore::cpu {

namespace {

template <typename Fn>
void with_index_type(DType t, Fn&& fn) {
  if (t == DType::kInt32) fn(int32_t{});
  else fn(int64_t{});
}

template <typename Fn>
void with_word(size_t elem, Fn&& fn) {
  switch (elem) {
    case 1: fn(uint8_t{}); break;
    case 2: fn(uint16_t{}); break;
    case 4: fn(uint32_t{}); break;
    default: fn(uint64_t{}); break;
  }
}

template <typename W>
inline void put(char* base, int64_t i, const char* src_base, int64_t j) {
  std::memcpy(base + i * (int64_t)sizeof(W), src_base + j * (int64_t)sizeof(W), sizeof(W));
}

std::string coords_str(const Shape& shape, int64_t flat) {
  std::string s;
  for (int d = shape.ndim() - 1; d >= 0; --d) {
    const int64_t c = flat % shape[d];
    flat /= shape[d];
    s = (d == shape.ndim() - 1 ? "" : ", ") + s;
    s = std::to_string(c) + s;
  }
  return "[" + s + "]";
}

// Checks every index against [0, limit) before any is used (NOTE [Index checks]): a parallel
// scan finds whether any is bad, then a serial one finds the first, for a stable message.
template <typename I>
void check_indices(const KernelCall& call, const Tensor& index, int64_t limit, const std::string& what) {
  const I* p = static_cast<const I*>(index.data_ptr());
  const Shape& st = index.strides();
  const int n = index.ndim();
  const int64_t last = n ? st[n - 1] : 0;
  auto run_ok = [&](const int64_t* c, int64_t run) {
    const I* q = p + dot_coords(c, st);
    for (int64_t k = 0; k < run; ++k) {
      const int64_t v = (int64_t)q[k * last];
      if (v < 0 || v >= limit) return k;
    }
    return run;
  };
  std::atomic<bool> bad{false};
  parallel_runs(index.shape(), 4 * kCopyGrain, [&](int64_t, const int64_t* c, int64_t run) {
    if (run_ok(c, run) != run) bad.store(true, std::memory_order_relaxed);
  });
  if (!bad.load()) return;
  int64_t first = -1, value = 0;
  for_each_run(index.shape(), 0, index.numel(), [&](int64_t i, const int64_t* c, int64_t run) {
    if (first >= 0) return;
    const int64_t k = run_ok(c, run);
    if (k == run) return;
    first = i + k;
    value = (int64_t)p[dot_coords(c, st) + k * last];
  });
  op_error(call.def, ErrorCode::kIndex,
           what + " " + std::to_string(value) + " at position " + coords_str(index.shape(), first) +
               " is out of range: valid values are 0 to " + std::to_string(limit - 1) + " (extent " +
               std::to_string(limit) + "; negative indices are not wrapped)");
}

// ---- gather ---------------------------------------------------------------------------------
void gather_kernel(const KernelCall& call) {
  const Tensor& x = call.inputs[0];
  const Tensor& index = call.inputs[1];
  const Tensor& out = call.outputs[0];
  const int n = x.ndim();
  const int axis = normalize_axis(call.attrs.i(0), n, call.def.name);
  // A 0-d x is treated as one element along the gather axis.
  const int64_t limit = n ? x.shape()[axis] : 1;
  const int64_t xs_axis = n ? x.strides()[axis] : 0;
  Shape xs = x.strides();
  if (n) xs[axis] = 0;  // the axis coordinate comes from the index, not from the position
  const Shape& is = index.strides();
  const int64_t xs_last = n ? xs[n - 1] : 0, is_last = n ? is[n - 1] : 0;
  const char* src = static_cast<const char*>(x.data_ptr());
  char* dst = static_cast<char*>(out.data_ptr());
  with_index_type(index.dtype(), [&](auto i_tag) {
    using I = decltype(i_tag);
    check_indices<I>(call, index, limit, "index");
    const I* ip = static_cast<const I*>(index.data_ptr());
    with_word(x.itemsize(), [&](auto w_tag) {
      using W = decltype(w_tag);
      parallel_runs(out.shape(), kCopyGrain, [&](int64_t i, const int64_t* c, int64_t run) {
        const int64_t xo = dot_coords(c, xs), io = dot_coords(c, is);
        for (int64_t k = 0; k < run; ++k)
          put<W>(dst, i + k, src, xo + k * xs_last + (int64_t)ip[io + k * is_last] * xs_axis);
      });
    });
  });
}

// ---- index_select ---------------------------------------------------------------------------
void index_select_kernel(const KernelCall& call) {
  const Tensor& x = call.inputs[0];
  const Tensor& index = call.inputs[1];
  const Tensor& out = call.outputs[0];
  const int n = x.ndim();
  const int axis = normalize_axis(call.attrs.i(0), n, call.def.name);
  const int64_t xs_axis = x.strides()[axis], is0 = index.strides()[0];
  Shape xs = x.strides();
  xs[axis] = 0;
  const char* src = static_cast<const char*>(x.data_ptr());
  char* dst = static_cast<char*>(out.data_ptr());
  const int64_t e = (int64_t)x.itemsize();
  with_index_type(index.dtype(), [&](auto i_tag) {
    using I = decltype(i_tag);
    check_indices<I>(call, index, x.shape()[axis], "index");
    const I* ip = static_cast<const I*>(index.data_ptr());
    with_word(x.itemsize(), [&](auto w_tag) {
      using W = decltype(w_tag);
      parallel_runs(out.shape(), kCopyGrain, [&](int64_t i, const int64_t* c, int64_t run) {
        const int64_t xo = dot_coords(c, xs);
        if (axis == n - 1) {  // the index varies along the run
          for (int64_t k = 0; k < run; ++k)
            put<W>(dst, i + k, src, xo + (int64_t)ip[(c[axis] + k) * is0] * xs_axis);
        } else {  // one source row per run
          const int64_t row = xo + (int64_t)ip[c[axis] * is0] * xs_axis;
          copy_elements(src + row * e, x.strides()[n - 1], dst + i * e, 1, run, (size_t)e);
        }
      });
    });
  });
}

// ---- embedding ------------------------------------------------------------------------------
void embedding_kernel(const KernelCall& call) {
  const Tensor& ids = call.inputs[0];
  const Tensor& table = call.inputs[1];
  const Tensor& out = call.outputs[0];
  const int64_t dim = table.shape()[1], t0 = table.strides()[0], t1 = table.strides()[1];
  const char* src = static_cast<const char*>(table.data_ptr());
  char* dst = static_cast<char*>(out.data_ptr());
  const size_t e = table.itemsize();
  const Shape& st = ids.strides();
  const int64_t last = ids.ndim() ? st[ids.ndim() - 1] : 0;
  with_index_type(ids.dtype(), [&](auto i_tag) {
    using I = decltype(i_tag);
    check_indices<I>(call, ids, table.shape()[0], "id");
    if (dim == 0) return;
    const I* ip = static_cast<const I*>(ids.data_ptr());
    const int64_t grain = std::max<int64_t>(1, kCopyGrain / dim);
    parallel_runs(ids.shape(), grain, [&](int64_t i, const int64_t* c, int64_t run) {
      const I* q = ip + dot_coords(c, st);
      for (int64_t k = 0; k < run; ++k) {
        const int64_t row = (int64_t)q[k * last];
        copy_elements(src + row * t0 * (int64_t)e, t1, dst + (i + k) * dim * (int64_t)e, 1, dim, e);
      }
    });
  });
}

// ---- scatter_add ----------------------------------------------------------------------------
// NOTE [Deterministic scatter_add]
// Several positions of index may name one output element, so a parallel loop over index
// positions would race, and atomics would make float sums depend on the thread count. Instead
// the work is split over the "lines" of index: the positions that share every coordinate except
// the axis one. Two lines never touch the same output element (they differ off the axis, where
// the output coordinate is the index position's own), and within a line the adds run serially
// in index order. Each output element thus gets its additions in the same order whatever the
// thread count. Half-precision values are added in float32 and rounded after each add, as in
// PyTorch; integers are added as uint64_t, so overflow wraps (two's complement) instead of being
// undefined.
template <typename T>
using ScatterAcc = std::conditional_t<std::is_same_v<T, double>, double,
                                      std::conditional_t<std::is_integral_v<T>, uint64_t, float>>;

template <typename T>
void scatter_add_kernel(const KernelCall& call) {
  const Tensor& x = call.inputs[0];
  const Tensor& index = call.inputs[1];
  const Tensor& src = call.inputs[2];
  const Tensor& out = call.outputs[0];
  const int n = x.ndim();
  const int axis = normalize_axis(call.attrs.i(0), n, call.def.name);
  strided_copy(x.data_ptr(), x.strides(), out.data_ptr(), out.strides(), x.shape(), sizeof(T));
  // A 0-d x is one element along the axis, as in gather.
  const int64_t limit = n ? x.shape()[axis] : 1;
  const int64_t len = n ? index.shape()[axis] : 1;
  if (index.numel() == 0) return;
  Shape lines = index.shape();
  if (n) lines[axis] = 1;
  const Shape &is = index.strides(), &ss = src.strides(), &os = out.strides();
  const int64_t is_axis = n ? is[axis] : 0, ss_axis = n ? ss[axis] : 0, os_axis = n ? os[axis] : 0;
  const int64_t is_last = n ? is[n - 1] : 0, ss_last = n ? ss[n - 1] : 0, os_last = n ? os[n - 1] : 0;
  const T* sp = static_cast<const T*>(src.data_ptr());
  T* op = static_cast<T*>(out.data_ptr());
  with_index_type(index.dtype(), [&](auto i_tag) {
    using I = decltype(i_tag);
    check_indices<I>(call, index, limit, "index");
    const I* ip = static_cast<const I*>(index.data_ptr());
    const int64_t grain = std::max<int64_t>(1, kCopyGrain / len);
    // The axis coordinate of every line is 0, so dot_coords gives the line's start in each tensor.
    parallel_runs(lines, grain, [&](int64_t, const int64_t* c, int64_t run) {
      const int64_t io = dot_coords(c, is), so = dot_coords(c, ss), oo = dot_coords(c, os);
      for (int64_t l = 0; l < len; ++l) {
        for (int64_t k = 0; k < run; ++k) {
          const int64_t at = (int64_t)ip[io + l * is_axis + k * is_last];
          T& o = op[oo + at * os_axis + k * os_last];
          o = static_cast<T>(static_cast<ScatterAcc<T>>(o) +
                             static_cast<ScatterAcc<T>>(sp[so + l * ss_axis + k * ss_last]));
        }
      }
    });
  });
}

}  // namespace

void register_index_kernels() {
  for (DType t : kAllDTypes) {
    register_kernel(OpId::k_gather, kCpuBackend, t, &gather_kernel);
    register_kernel(OpId::k_index_select, kCpuBackend, t, &index_select_kernel);
    register_kernel(OpId::k_embedding, kCpuBackend, t, &embedding_kernel);
  }
  // bool adds as PyTorch's does: a logical or (the uint64_t sum converts back to true if nonzero).
  register_kernel(OpId::k_scatter_add, kCpuBackend, DType::kBool, &scatter_add_kernel<bool>);
  register_kernel(OpId::k_scatter_add, kCpuBackend, DType::kInt8, &scatter_add_kernel<int8_t>);
  register_kernel(OpId::k_scatter_add, kCpuBackend, DType::kUInt8, &scatter_add_kernel<uint8_t>);
  register_kernel(OpId::k_scatter_add, kCpuBackend, DType::kInt32, &scatter_add_kernel<int32_t>);
  register_kernel(OpId::k_scatter_add, kCpuBackend, DType::kInt64, &scatter_add_kernel<int64_t>);
  register_kernel(OpId::k_scatter_add, kCpuBackend, DType::kFloat16, &scatter_add_kernel<Half>);
  register_kernel(OpId::k_scatter_add, kCpuBackend, DType::kBFloat16, &scatter_add_kernel<BFloat16>);
  register_kernel(OpId::k_scatter_add, kCpuBackend, DType::kFloat32, &scatter_add_kernel<float>);
  register_kernel(OpId::k_scatter_add, kCpuBackend, DType::kFloat64, &scatter_add_kernel<double>);
}

}  // namespace spore::cpu
