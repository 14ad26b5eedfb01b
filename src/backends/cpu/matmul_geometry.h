// Internal to the CPU matmul kernels: one batched matmul problem described by strides, so that
// every path (oneDNN, the direct kernels) reads transposed, sliced and broadcast operands in
// place (NOTE [Matmul shapes] in src/ops/matmul.cc).
#pragma once
#include <cstdint>
#include <vector>

#include "spore/tensor.h"

namespace spore::cpu {

// One operand as a batch of matrices: element (batch b, row r, col c) lives at
// data + offset(b) + r * rs + c * cs, in elements. Batch strides are 0 where the operand is
// broadcast over that batch axis.
struct MatOperand {
  const void* data = nullptr;
  int64_t rs = 0, cs = 0;
  std::vector<int64_t> batch_strides;  // one per MatmulGeometry::batch axis
};

struct MatmulGeometry {
  int64_t m = 0, n = 0, k = 0;
  std::vector<int64_t> batch;  // output batch extents, size-1 axes dropped, mergeable axes merged
  MatOperand a, b;
  void* out = nullptr;  // contiguous batch + [m, n]
  DType dtype = DType::kFloat32;

  int64_t batch_count() const {
    int64_t c = 1;
    for (int64_t d : batch) c *= d;
    return c;
  }
  // Element offsets of batch item `index` (row-major over `batch`) in a and b.
  void batch_offsets(int64_t index, int64_t& off_a, int64_t& off_b) const {
    off_a = off_b = 0;
    for (int i = (int)batch.size() - 1; i >= 0; --i) {
      int64_t j = index % batch[i];
      index /= batch[i];
      off_a += j * a.batch_strides[i];
      off_b += j * b.batch_strides[i];
    }
  }
};

// Describes out = a @ b from the kernel's tensors (a, b in out's dtype). Strides of axes of
// extent 1 are normalised so that layout checks see through them.
MatmulGeometry matmul_geometry(const Tensor& a, const Tensor& b, const Tensor& out);

// Row- or column-major with a leading dimension no smaller than the matrix: the layouts BLAS-style
// gemm (oneDNN) reads in place.
inline bool matmul_plain(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  return (cs == 1 && rs >= cols) || (rs == 1 && cs >= rows);
}

// A contiguous copy of `t` converted to `to` (float16/bfloat16/float32 sources, or any source
// when to == t.dtype()), for operands whose layout or dtype a fast path cannot take.
Tensor matmul_contiguous(const Tensor& t, DType to);

// The direct kernels (matmul_direct.cc): any dtype but bool; exact per-element reduction order
// (k ascending), so results never depend on the thread count.
void matmul_direct(const MatmulGeometry& g);

// The oneDNN path (matmul_dnnl.cc): float32, and bfloat16 on CPUs with AVX512_BF16. Returns
// false, having written nothing, when oneDNN cannot take this layout or dtype; the caller then
// packs the operands, converts them, or takes the direct path.
bool matmul_dnnl(const MatmulGeometry& g);

// Problems at or below this many multiply-adds (m * n * k per batch item, times the batch)
// skip oneDNN: its per-call cost (~4 us) dominates there. Measured with BM_SmallPath
// (bench/matmul_bench.cc) on an AVX2 Zen 3: direct wins up to n = 24 (13824), ties at n = 32.
inline constexpr int64_t kMatmulDirectMaxMacs = 16384;

}  // namespace spore::cpu
