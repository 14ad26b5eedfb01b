// Matmul weights stored with a padded row pitch (NOTE [Weight pitch]): a large float32 constant
// that a matmul reads as its right operand, row-major or transposed, is replaced by a view of a
// row-major copy whose rows are kWeightPitchPad floats longer, so oneDNN reads it through its
// general gemm.
#include <cstring>

#include "graph/passes/pass_util.h"
#include "spore/ops.h"

namespace spore::graph {

namespace {

// Extra floats per row: one cache line, so each row stays as aligned as the unpadded one.
constexpr int64_t kWeightPitchPad = 16;
// Below this many elements (256 KiB of float32) the implementations differ by microseconds.
constexpr int64_t kWeightPitchMinElements = int64_t{1} << 16;

// Row-major or a transposed view (a Gemm's transB weight, folded with its strides): both go to
// brgemm. A weight already read through a padded pitch is left as it is.
bool padded_candidate(const Tensor& t) {
  if (!t.defined() || t.dtype() != DType::kFloat32 || !(t.device() == Device::cpu()) || t.shape().ndim() != 2 ||
      t.shape()[1] < 64 || t.numel() < kWeightPitchMinElements)
    return false;
  const bool row_major = t.strides()[1] == 1 && t.strides()[0] == t.shape()[1];
  const bool transposed = t.strides()[0] == 1 && t.strides()[1] == t.shape()[0];
  return row_major || transposed;
}

Tensor with_padded_pitch(const Tensor& weight) {
  const Tensor w = weight.contiguous();
  const int64_t k = w.shape()[0], n = w.shape()[1], pitch = n + kWeightPitchPad;
  Tensor storage = Tensor::empty(Shape{k, pitch}, DType::kFloat32, Device::cpu());
  const float* src = w.data<float>();
  float* dst = storage.data<float>();
  for (int64_t r = 0; r < k; ++r) {
    std::memcpy(dst + r * pitch, src + r * n, (size_t)n * sizeof(float));
    std::memset(dst + r * pitch + n, 0, (size_t)kWeightPitchPad * sizeof(float));
  }
  return slice(storage, 1, 0, n);
}

}  // namespace

PassStats pad_matmul_weight_pitch(Graph& g) {
  PassStats stats = start_stats("pitch", g);
  const auto writers = writers_of_values(g);
  const size_t nodes = g.num_nodes();
  for (size_t i = 0; i < nodes; ++i) {
    const Node& node = g.node((int)i);
    if (node.op() != OpId::k_matmul || node.num_inputs != 2) continue;
    const ValueId w = g.inputs((int)i)[1];
    // A weight two matmuls share was replaced at the first: the second reads the padded copy,
    // a value added here (past `writers`), which is already padded.
    if (w >= writers.size() || !is_constant(g, w, writers) || !padded_candidate(g.value(w).tensor)) continue;
    const std::string name = g.value(w).name;
    g.replace_uses(w, g.add_constant(with_padded_pitch(g.value(w).tensor), name));
    ++stats.constants_changed;
  }
  return finish_stats(stats, g);
}

}  // namespace spore::graph
