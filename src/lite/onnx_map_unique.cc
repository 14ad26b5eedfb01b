// ONNX's Unique and NonZero (NOTE [ONNX attention and losses]): their output extents depend on
// the input's values, so, like NonMaxSuppression, they are computed when the graph is mapped from
// values known then (constants, or predict's inputs: mapped at predict and again when those values
// change). Unique's values are taken from X itself (index_select at the first occurrences), so
// they keep X's type exactly; the index outputs are constants. Inputs over 2^20 elements, and
// 64-bit integers beyond float64's 2^53 (compared as float64 here), are refused.
#include <algorithm>
#include <cmath>
#include <map>

#include "lite/onnx_mapper.h"

namespace spore::onnx::detail {
namespace {

constexpr int64_t kMaxElements = int64_t{1} << 20;

std::vector<double> values_of(NodeCtx& c, uint32_t x, const char* what) {
  if (c.m.shape(x).numel() > kMaxElements) c.unsupported(c.node.op_type() + " over 2^20 elements (it runs when the graph is mapped)");
  const Tensor t = c.m.data(c, x, what);
  const std::vector<double> v = t.contiguous().to(DType::kFloat64).to_vector<double>();
  if (t.dtype() == DType::kInt64)
    for (double d : v)
      if (std::fabs(d) > 9007199254740992.0) c.unsupported(c.node.op_type() + " of 64-bit integers beyond 2^53");
  return v;
}

std::vector<uint32_t> non_zero(NodeCtx& c) {
  const uint32_t x = c.at(0);
  const Shape s = c.m.shape(x);
  const std::vector<double> v = values_of(c, x, "input (NonZero runs when the graph is mapped)");
  const int rank = std::max(s.ndim(), 1);
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < (int64_t)v.size(); ++i)
    if (v[(size_t)i] != 0) hits.push_back(i);
  std::vector<int64_t> out((size_t)rank * hits.size());
  for (size_t h = 0; h < hits.size(); ++h) {
    int64_t rest = hits[h];
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t extent = s.ndim() == 0 ? 1 : s[d];
      out[(size_t)d * hits.size() + h] = rest % extent;
      rest /= extent;
    }
  }
  return {c.m.constant_of(out, Shape{rank, (int64_t)hits.size()})};
}

std::vector<uint32_t> unique(NodeCtx& c) {
  Mapper& m = c.m;
  uint32_t x = c.at(0);
  const bool has_axis = c.has("axis");
  if (!has_axis) x = m.reshape(c, x, {-1});
  const Shape s = m.shape(x);
  const int axis = has_axis ? normalize_axis(c, c.i("axis", 0), s.ndim()) : 0;
  const std::vector<double> v = values_of(c, c.at(0), "input (Unique runs when the graph is mapped)");
  // Slice k along the axis as the vector of its elements (row-major order within the slice).
  const std::span<const int64_t> dims = s.dims();
  const int64_t n = dims[(size_t)axis];
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    if ((int)d < axis) outer *= dims[d];
    if ((int)d > axis) inner *= dims[d];
  }
  std::vector<std::vector<double>> slice((size_t)n);
  for (int64_t k = 0; k < n; ++k)
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {  // each element as (is NaN, value): NaNs equal and last, a strict order
        const double e = v[(size_t)((o * n + k) * inner + i)];
        slice[(size_t)k].push_back(std::isnan(e) ? 1.0 : 0.0);
        slice[(size_t)k].push_back(std::isnan(e) ? 0.0 : e);
      }
  std::map<std::vector<double>, int64_t> first;  // slice -> its first position
  std::vector<int64_t> order;                      // first positions, in order of appearance
  for (int64_t k = 0; k < n; ++k)
    if (first.emplace(slice[(size_t)k], k).second) order.push_back(k);
  if (c.i("sorted", 1) != 0)  // ascending (lexicographic over a slice's elements)
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return slice[(size_t)a] < slice[(size_t)b]; });
  std::map<std::vector<double>, int64_t> rank_of;
  for (size_t r = 0; r < order.size(); ++r) rank_of[slice[(size_t)order[r]]] = (int64_t)r;
  std::vector<int64_t> inverse((size_t)n), counts(order.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    inverse[(size_t)k] = rank_of[slice[(size_t)k]];
    ++counts[(size_t)inverse[(size_t)k]];
  }
  const int64_t u = (int64_t)order.size();
  const uint32_t y = u == 0 ? m.emit(c, OpId::k_copy, {x}) : m.take(c, x, axis, order);
  return {y, m.constant_of(order, Shape{u}), m.constant_of(inverse, Shape{n}), m.constant_of(counts, Shape{u})};
}

}  // namespace

void add_unique_ops(HandlerTable& t) {
  t["Unique"] = unique;
  t["NonZero"] = non_zero;
}

}  // namespace spore::onnx::detail
