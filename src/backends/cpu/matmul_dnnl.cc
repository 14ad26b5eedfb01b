// The float32 matmul path through oneDNN (Debian's libdnnl 2.6, OpenMP runtime).
//
// NOTE [oneDNN matmul]
// * Primitive creation costs far more than a small matmul, so primitives are cached by
//   everything that shapes them: m, n, k, the batch extents, every stride, and the thread count
//   (oneDNN's gemm plans its partitioning when the primitive is created).
// * Strides go into the memory descriptors, so transposed and sliced views run in place as long
//   as each matrix has one unit stride (row- or column-major with a leading dimension); other
//   layouts make the caller pack the operand first.
// * Engine, per-thread streams, OpenMP thread count and user scratchpads: NOTE [oneDNN runtime]
//   (dnnl_runtime.h), shared with the convolutions.
// * Determinism: for a given thread count the result is reproducible run to run; between
//   thread counts oneDNN may split the reduction differently (float reassociation, last-bit
//   differences). The direct kernels (matmul_direct.cc) are thread-count independent.
// * bfloat16 runs natively (bf16 inputs, float32 accumulation, one rounding to bf16) only where
//   the CPU has AVX512_BF16; elsewhere oneDNN would emulate it more slowly than the float32 path
//   the caller then takes (convert, multiply in float32, round once: the same result).
#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>
#include <vector>

#include "cpu_features.h"
#include "matmul_geometry.h"
#include "dnnl_runtime.h"
#include "pool_region.h"
#include "thread_pool.h"
#include "spore/context.h"

namespace spore::cpu {

namespace {

using dnnl::memory;
using Dims = memory::dims;

using dnnl_rt::engine;  // NOTE [oneDNN runtime]

// One matrix of an oneDNN problem: rows x cols with strides, plus an optional leading batch axis.
struct Mat {
  int64_t rows, cols, rs, cs;
  int64_t batch = 0;  // 0: 2-D problem; otherwise the batch extent (1 = broadcast)
  int64_t bs = 0;     // batch stride
};

memory::desc desc_of(const Mat& x, memory::data_type dt) {
  if (x.batch == 0) return memory::desc(Dims{x.rows, x.cols}, dt, Dims{x.rs, x.cs});
  // A broadcast batch axis has extent 1; its stride only has to be a valid one.
  int64_t bs = x.batch == 1 ? x.rows * x.cols : x.bs;
  return memory::desc(Dims{x.batch, x.rows, x.cols}, dt, Dims{bs, x.rs, x.cs});
}

struct Entry {
  dnnl::matmul prim;
  memory::desc a, b, c, scratch;
};

using Key = std::array<int64_t, 16>;

Key key_of(const Mat& a, const Mat& b, const Mat& c, int threads, memory::data_type dt) {
  return {a.rows, a.cols, a.rs, a.cs, a.batch, a.bs, b.cols, b.rs, b.cs, b.batch, b.bs,
          c.rs,   c.batch, c.bs, threads, (int64_t)dt};
}

// The cached primitive for this problem, or nullptr when oneDNN refuses it. Shared ownership:
// another thread may clear the cache while this one still runs the primitive.
std::shared_ptr<const Entry> primitive(const Mat& a, const Mat& b, const Mat& c, int threads,
                                       memory::data_type dt) {
  static std::mutex mu;
  static std::map<Key, std::shared_ptr<const Entry>> cache;  // refusals are cached as nullptr
  const Key key = key_of(a, b, c, threads, dt);
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (cache.size() >= 512) cache.clear();  // a bound, not a policy: shapes rarely vary that much
  std::shared_ptr<Entry> e;
  try {
    e = std::make_shared<Entry>();
    e->a = desc_of(a, dt);
    e->b = desc_of(b, dt);
    e->c = desc_of(c, dt);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl_rt::set_threads(threads);  // the count oneDNN plans for (NOTE [oneDNN runtime])
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(e->a, e->b, e->c), attr, engine());
    e->scratch = pd.scratchpad_desc();
    e->prim = dnnl::matmul(pd);
  } catch (const dnnl::error&) {
    e.reset();
  }
  return cache[key] = std::move(e);
}

void execute(const Entry& e, const void* a, const void* b, void* c) {
  std::unordered_map<int, memory> args;
  args.emplace(DNNL_ARG_SRC, dnnl_rt::memory(e.a, a));
  args.emplace(DNNL_ARG_WEIGHTS, dnnl_rt::memory(e.b, b));
  args.emplace(DNNL_ARG_DST, dnnl_rt::memory(e.c, c));
  dnnl_rt::execute(e.prim, e.scratch, args);
}

// NOTE [oneDNN on the pool]: a 2-D product cut into one slab per pool thread, each a
// single-threaded oneDNN call run as a parallel_for chunk. Columns when n is wide enough
// (every slab reads all of A and its own columns of B), else rows. False, having written
// nothing, when the problem is too narrow to cut or oneDNN refuses a slab's shape.
bool run_on_pool(const Mat& a, const Mat& b, const Mat& c, int threads, memory::data_type dt, const char* A,
                 const char* B, char* C, size_t item) {
  // Rows unless the output is wide (512 columns a slab) or too short to cut by rows.
  const bool by_cols = c.cols >= 512 * threads || c.rows < 16 * threads;
  if (by_cols && c.cols < 64 * threads) return false;
  const int64_t extent = by_cols ? c.cols : c.rows;
  // Column slabs in multiples of 16 (a cache line of float32), so that they start aligned.
  const Slabs cut = cut_into_slabs(extent, threads, by_cols ? 16 : 1);
  const int64_t slabs = cut.count;
  auto slab = [&](int64_t i, Mat& as, Mat& bs, Mat& cs, int64_t& off_a, int64_t& off_b, int64_t& off_c) {
    const int64_t first = i * cut.step, width = cut.width(i, extent);
    as = a, bs = b, cs = c;
    off_a = off_b = off_c = 0;
    if (by_cols) {
      bs.cols = cs.cols = width;
      off_b = first * b.cs, off_c = first * c.cs;
    } else {
      as.rows = cs.rows = width;
      off_a = first * a.rs, off_c = first * c.rs;
    }
  };
  // Every slab shape (the last may be narrower) is created before any slab runs.
  std::vector<std::shared_ptr<const Entry>> entries((size_t)slabs);
  for (int64_t i = 0; i < slabs; ++i) {
    Mat as, bs, cs;
    int64_t oa, ob, oc;
    slab(i, as, bs, cs, oa, ob, oc);
    if (!(entries[(size_t)i] = primitive(as, bs, cs, 1, dt))) return false;
  }
  parallel_for(slabs, 1, [&](int64_t first, int64_t last) {
    dnnl_rt::set_threads(1);
    for (int64_t i = first; i < last; ++i) {
      Mat as, bs, cs;
      int64_t oa, ob, oc;
      slab(i, as, bs, cs, oa, ob, oc);
      execute(*entries[(size_t)i], A + oa * (int64_t)item, B + ob * (int64_t)item, C + oc * (int64_t)item);
    }
  });
  return true;
}

// Runs a 2-D problem: on the pool when threads > 1 and it cuts, else as one oneDNN call with an
// OpenMP team of `threads`.
bool run_2d(const Mat& a, const Mat& b, const Mat& c, int threads, memory::data_type dt, const char* A,
            const char* B, char* C, size_t item) {
  if (threads > 1 && run_on_pool(a, b, c, threads, dt, A, B, C, item)) return true;
  const auto e = primitive(a, b, c, threads, dt);
  if (!e) return false;
  dnnl_rt::set_threads(threads);
  execute(*e, A, B, C);
  return true;
}

}  // namespace

bool matmul_dnnl(const MatmulGeometry& g) {
  const int64_t m = g.m, n = g.n, k = g.k;
  if (!matmul_plain(m, k, g.a.rs, g.a.cs) || !matmul_plain(k, n, g.b.rs, g.b.cs)) return false;
  memory::data_type dt = memory::data_type::f32;
  if (g.dtype == DType::kBFloat16) {
    if (!cpu_features().avx512bf16) return false;  // NOTE [oneDNN matmul]: native bf16 only
    dt = memory::data_type::bf16;
  } else if (g.dtype != DType::kFloat32) {
    return false;
  }
  const int threads = onednn_threads(g.batch_count() * m * n * k);  // NOTE [Threads that sleep]
  const size_t item = dtype_size(g.dtype);
  // Element offsets below are scaled by the element size through these byte pointers.
  const char* A = static_cast<const char*>(g.a.data);
  const char* B = static_cast<const char*>(g.b.data);
  char* C = static_cast<char*>(g.out);
  const int nb = (int)g.batch.size();

  // b shared by every batch item and a's items stacked evenly: one tall 2-D product
  // (x[batch..., m, k] @ w[k, n], the dense-layer case). One-row items stack in either order:
  // a recurrent layer's input projection reads x[t, 1, k] from a [k, t] buffer (column-major
  // rows), and as 20 one-row products oneDNN took 3.1 ms for what one 20-row product does in 0.3.
  if (nb == 1 && g.b.batch_strides[0] == 0 && m == 1) {
    const int64_t bsa = g.a.batch_strides[0];
    if (matmul_plain(g.batch[0], k, bsa, g.a.cs)) {
      Mat a{g.batch[0], k, bsa, g.a.cs};
      Mat b{k, n, g.b.rs, g.b.cs};
      Mat c{g.batch[0], n, n, 1};
      if (run_2d(a, b, c, threads, dt, A, B, C, item)) return true;
    }
  }
  if (nb == 1 && g.b.batch_strides[0] == 0 && g.a.cs == 1 && m > 1) {
    const int64_t bsa = g.a.batch_strides[0];
    if (bsa == m * g.a.rs) {
      Mat a{g.batch[0] * m, k, g.a.rs, 1};
      Mat b{k, n, g.b.rs, g.b.cs};
      Mat c{g.batch[0] * m, n, n, 1};
      if (run_2d(a, b, c, threads, dt, A, B, C, item)) return true;
    }
  }

  const Mat a2{m, k, g.a.rs, g.a.cs}, b2{k, n, g.b.rs, g.b.cs}, c2{m, n, n, 1};
  if (nb == 0) return run_2d(a2, b2, c2, threads, dt, A, B, C, item);
  dnnl_rt::set_threads(threads);

  // The innermost batch axis goes to oneDNN as a 3-D problem; outer axes (left after merging in
  // matmul_geometry) are a loop here.
  const int64_t inner = g.batch[nb - 1];
  const int64_t sa = g.a.batch_strides[nb - 1], sb = g.b.batch_strides[nb - 1];
  Mat a3 = a2, b3 = b2, c3 = c2;
  a3.batch = sa == 0 ? 1 : inner;
  a3.bs = sa;
  b3.batch = sb == 0 ? 1 : inner;
  b3.bs = sb;
  c3.batch = inner;
  c3.bs = m * n;
  const auto e3 = primitive(a3, b3, c3, threads, dt);
  const auto e2 = e3 ? nullptr : primitive(a2, b2, c2, threads, dt);
  if (!e3 && !e2) return false;
  const int64_t outer = g.batch_count() / inner;
  for (int64_t o = 0; o < outer; ++o) {
    int64_t off_a, off_b;
    g.batch_offsets(o * inner, off_a, off_b);
    char* c = C + o * inner * m * n * item;
    if (e3) {
      execute(*e3, A + off_a * item, B + off_b * item, c);
      continue;
    }
    for (int64_t i = 0; i < inner; ++i)
      execute(*e2, A + (off_a + i * sa) * item, B + (off_b + i * sb) * item, c + i * m * n * item);
  }
  return true;
}

}  // namespace spore::cpu
