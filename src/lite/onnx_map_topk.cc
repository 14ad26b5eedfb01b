// ONNX TopK onto registry ops (NOTE [ONNX op sets]): with no sort op, each element's rank along the
// axis is counted from all pairwise comparisons (ties to the lower index, as the spec orders them),
// and output slot r takes the element whose rank is r. Quadratic in the axis' extent, so refused
// over 4,096 cells or 2^26 comparisons; enough for the small top-k of classifier and detector heads.
#include "lite/onnx_mapper.h"

namespace spore::onnx::detail {
namespace {

std::vector<uint32_t> topk(NodeCtx& c) {
  Mapper& m = c.m;
  uint32_t x = c.at(0);
  const Shape s = m.shape(x);
  if (s.ndim() == 0) c.bad("TopK of a 0-d input");
  const int axis = normalize_axis(c, c.i("axis", -1), s.ndim());
  int64_t k;
  if (m.opset < 10) {
    k = c.i("k", -1);
  } else {
    const std::vector<int64_t> kv = m.int_data(c, c.at(1), "k");
    if (kv.size() != 1) c.bad("k must hold one value");
    k = kv[0];
  }
  const int64_t n = s[axis];
  if (k < 0 || k > n) c.bad("k = " + std::to_string(k) + " for an axis of " + std::to_string(n));
  if (n > 4096 || (double)s.numel() * (double)n > (double)(int64_t{1} << 26))
    c.unsupported("TopK over " + std::to_string(n) + " cells of " + std::to_string(s.numel()) + " (pairwise ranks: at most 4,096 and 2^26 comparisons)");
  const bool largest = c.i("largest", 1) != 0;
  // The axis last.
  const AxisLast last = axis_last(s.ndim(), axis);
  const std::vector<int64_t>&perm = last.perm, &back = last.back;
  x = m.emit(c, OpId::k_permute, {x}, Attrs::of(perm));
  const Shape xs = m.shape(x);
  std::vector<int64_t> col(xs.begin(), xs.end()), row(xs.begin(), xs.end());
  col.push_back(1);                    // x_i as [..., n, 1]
  row.insert(row.end() - 1, 1);        // x_j as [..., 1, n]
  const uint32_t xi = m.reshape(c, x, col), xj = m.reshape(c, x, row);
  std::vector<int64_t> lower((size_t)(n * n));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) lower[(size_t)(i * n + j)] = j < i;
  Tensor tie = Tensor::empty(Shape{n, n}, DType::kBool, Device::cpu());
  for (int64_t q = 0; q < n * n; ++q) static_cast<uint8_t*>(tie.data_ptr())[q] = (uint8_t)lower[(size_t)q];
  // j ranks before i: strictly better, or equal with a lower index.
  const uint32_t better = m.emit(c, largest ? OpId::k_gt : OpId::k_lt, {xj, xi});
  const uint32_t before = m.emit(c, OpId::k_logical_or, {better, m.emit(c, OpId::k_logical_and, {m.emit(c, OpId::k_eq, {xj, xi}), m.constant(tie)})});
  const uint32_t rank = m.emit(c, OpId::k_sum, {m.cast_to(c, before, DType::kInt64)}, Attrs::of(std::vector<int64_t>{xs.ndim()}, false));
  // slot r takes element i where rank_i == r: [..., k, n] selections.
  std::vector<int64_t> slots((size_t)k);
  for (int64_t r = 0; r < k; ++r) slots[(size_t)r] = r;
  std::vector<int64_t> rank_row(xs.begin(), xs.end());
  rank_row.insert(rank_row.end() - 1, 1);
  const uint32_t pick = m.emit(c, OpId::k_eq, {m.reshape(c, rank, rank_row), m.constant_of(slots, Shape{k, 1})});
  const DType t = m.dtype(x);
  const uint32_t values = m.emit(c, OpId::k_sum, {m.emit(c, OpId::k_where, {pick, m.reshape(c, x, row), m.scalar(0, t)})},
                                 Attrs::of(std::vector<int64_t>{xs.ndim()}, false));
  std::vector<int64_t> positions((size_t)n);
  for (int64_t i = 0; i < n; ++i) positions[(size_t)i] = i;
  const uint32_t index = m.emit(c, OpId::k_sum, {m.emit(c, OpId::k_where, {pick, m.constant_of(positions, Shape{n}), m.scalar(0, DType::kInt64)})},
                                Attrs::of(std::vector<int64_t>{xs.ndim()}, false));
  return {m.emit(c, OpId::k_permute, {m.cast_to(c, values, t)}, Attrs::of(back)), m.emit(c, OpId::k_permute, {index}, Attrs::of(back))};
}

}  // namespace

void add_topk_ops(HandlerTable& t) { t["TopK"] = topk; }

}  // namespace spore::onnx::detail
