// ONNX GatherND and ScatterND onto registry ops (NOTE [ONNX op sets]): the k index components of
// each tuple become one linear index into data's first k axes flattened (sum of component times
// stride, negatives wrapped), so GatherND is an index_select and ScatterND a scatter_add over that
// flattened axis. YOLO-style detector exports carry ScatterND (in-place box decoding). Compress,
// whose condition must be known, is here too, and the scatter reductions mul, max and min.
#include <cmath>

#include "lite/onnx_mapper.h"

namespace spore::onnx::detail {
namespace {

// The linear index [M] of the tuples in `indices` [..., k] into data's first k axes.
uint32_t linear_index(NodeCtx& c, uint32_t data, uint32_t indices, int64_t* tuples) {
  Mapper& m = c.m;
  const Shape ds = m.shape(data), is = m.shape(indices);
  if (is.ndim() < 1) c.bad("indices must have at least one axis");
  const int64_t k = is[is.ndim() - 1];
  if (k < 1 || k > ds.ndim()) c.bad("the index tuples have " + std::to_string(k) + " components for data of rank " + std::to_string(ds.ndim()));
  std::vector<int64_t> stride((size_t)k), extent((size_t)k);
  int64_t s = 1;
  for (int64_t j = k - 1; j >= 0; --j) {
    stride[(size_t)j] = s;
    extent[(size_t)j] = ds[(int)j];
    s *= ds[(int)j];
  }
  const uint32_t idx = m.cast_to(c, indices, DType::kInt64);
  const uint32_t ext = m.constant_of(extent, Shape{k});
  const uint32_t wrapped = m.emit(c, OpId::k_where, {m.emit(c, OpId::k_lt, {idx, m.scalar(0, DType::kInt64)}),
                                                     m.emit(c, OpId::k_add, {idx, ext}), idx});
  const uint32_t lin = m.emit(c, OpId::k_sum, {m.emit(c, OpId::k_mul, {wrapped, m.constant_of(stride, Shape{k})})},
                              Attrs::of(std::vector<int64_t>{is.ndim() - 1}, false));
  *tuples = 1;
  for (int d = 0; d + 1 < is.ndim(); ++d) *tuples *= is[d];
  return m.reshape(c, lin, {*tuples});
}

// data as [prod(first k axes), rest...].
uint32_t flattened(NodeCtx& c, uint32_t data, int64_t k, std::vector<int64_t>* rest) {
  const Shape ds = c.m.shape(data);
  int64_t lead = 1;
  for (int d = 0; d < k; ++d) lead *= ds[d];
  rest->assign(ds.begin() + k, ds.end());
  std::vector<int64_t> shape = {lead};
  shape.insert(shape.end(), rest->begin(), rest->end());
  return c.m.reshape(c, data, shape);
}

uint32_t gather_tuples(NodeCtx& c, uint32_t data, uint32_t indices);

// GatherND with batch_dims b: the b leading axes of data and indices (equal) flattened into one
// batch axis P, and each tuple given its batch entry as a leading component, is GatherND with
// batch_dims 0 over [P, ...]; the result takes indices' leading shape back.
std::vector<uint32_t> gather_nd_batched(NodeCtx& c, int64_t b) {
  Mapper& m = c.m;
  const uint32_t data = c.at(0);
  const Shape ds = m.shape(data), is = m.shape(c.at(1));
  if (b < 0 || b >= std::min(ds.ndim(), is.ndim())) c.bad("batch_dims " + std::to_string(b) + " does not fit data and indices");
  int64_t p = 1;
  for (int d = 0; d < b; ++d) {
    if (ds[d] != is[d]) c.bad("data and indices differ in batch axis " + std::to_string(d));
    p *= ds[d];
  }
  const int64_t k = is[is.ndim() - 1];
  if (k < 1 || b + k > ds.ndim()) c.bad("the index tuples have " + std::to_string(k) + " components past batch_dims " + std::to_string(b));
  int64_t tuples = 1;
  for (int d = (int)b; d + 1 < is.ndim(); ++d) tuples *= is[d];
  std::vector<int64_t> data_shape = {p};
  data_shape.insert(data_shape.end(), ds.begin() + b, ds.end());
  std::vector<int64_t> batch_of((size_t)(p * tuples));
  for (int64_t i = 0; i < p * tuples; ++i) batch_of[(size_t)i] = i / std::max<int64_t>(tuples, 1);
  const uint32_t lead = m.constant_of(batch_of, Shape{p, tuples, 1});
  const uint32_t tuples_of = m.reshape(c, m.cast_to(c, c.at(1), DType::kInt64), {p, tuples, k});
  const uint32_t y = gather_tuples(c, m.reshape(c, data, data_shape), m.emit(c, OpId::k_concat, {lead, tuples_of}, Attrs::of(int64_t{2})));
  std::vector<int64_t> out(is.begin(), is.end() - 1);
  out.insert(out.end(), ds.begin() + b + k, ds.end());
  return {m.reshape(c, y, out)};
}

// data's slices at the tuples of indices [..., k]: [..., data's axes after k].
uint32_t gather_tuples(NodeCtx& c, uint32_t data, uint32_t indices) {
  const Shape is = c.m.shape(indices);
  int64_t tuples;
  const uint32_t lin = linear_index(c, data, indices, &tuples);
  std::vector<int64_t> rest;
  const int64_t k = is[is.ndim() - 1];
  const uint32_t y = c.m.emit(c, OpId::k_index_select, {flattened(c, data, k, &rest), lin}, Attrs::of(int64_t{0}));
  std::vector<int64_t> out(is.begin(), is.end() - 1);
  out.insert(out.end(), rest.begin(), rest.end());
  return c.m.reshape(c, y, out);
}

std::vector<uint32_t> gather_nd(NodeCtx& c) {
  if (const int64_t b = c.i("batch_dims", 0); b != 0) return gather_nd_batched(c, b);
  return {gather_tuples(c, c.at(0), c.at(1))};
}

}  // namespace

// The reductions mul, max and min (no registry scatter does them): a one-hot [T, Q] of each update
// row's linear index over flat's rows; each row of flat combined with the product / maximum /
// minimum of the updates aimed at it, rows no update aims at kept. At most 2^24 one-hot cells.
uint32_t scatter_reduced(NodeCtx& c, uint32_t flat, uint32_t lin, uint32_t upd, const std::string& reduction) {
  Mapper& m = c.m;
  const Shape fs = m.shape(flat), us = m.shape(upd);
  const int64_t q = fs[0], t = us[0];
  const int64_t rest = q > 0 ? fs.numel() / q : 0;
  if ((double)t * (double)q * (double)std::max<int64_t>(rest, 1) > (double)(int64_t{1} << 24))
    c.unsupported("a scatter with reduction '" + reduction + "' over " + std::to_string(t) + " x " + std::to_string(q) + " rows (at most 2^24 cells)");
  std::vector<int64_t> rows((size_t)q);
  for (int64_t i = 0; i < q; ++i) rows[(size_t)i] = i;
  std::vector<int64_t> hot_shape = {t, q}, upd_shape = {t, 1};
  for (int d = 1; d < fs.ndim(); ++d) hot_shape.push_back(1), upd_shape.push_back(fs[d]);
  const uint32_t hot = m.reshape(c, m.emit(c, OpId::k_eq, {m.reshape(c, lin, {t, 1}), m.constant_of(rows, Shape{1, q})}), hot_shape);
  const DType dt = m.dtype(flat);
  const double identity = reduction == "mul" ? 1.0 : reduction == "max" ? -INFINITY : INFINITY;
  const DType work = is_floating(dt) ? dt : DType::kFloat64;  // integers exact in float64 (below 2^53)
  const uint32_t vals = m.emit(c, OpId::k_where, {hot, m.cast_to(c, m.reshape(c, upd, upd_shape), work), m.scalar(identity, work)});
  uint32_t reduced;
  if (reduction == "mul") reduced = m.reshape(c, product_along(c, vals, 0), std::vector<int64_t>(fs.begin(), fs.end()));
  else reduced = m.emit(c, reduction == "max" ? OpId::k_max : OpId::k_min, {vals}, Attrs::of(std::vector<int64_t>{0}, false));
  const uint32_t hit = m.emit(c, OpId::k_max, {m.cast_to(c, hot, DType::kFloat32)}, Attrs::of(std::vector<int64_t>{0}, false));
  const uint32_t x = m.cast_to(c, flat, work);
  const uint32_t combined = m.emit(c, reduction == "mul" ? OpId::k_mul : reduction == "max" ? OpId::k_maximum : OpId::k_minimum, {x, reduced});
  return m.cast_to(c, m.emit(c, OpId::k_where, {m.emit(c, OpId::k_gt, {hit, m.scalar(0, DType::kFloat32)}), combined, x}), dt);
}

namespace {

std::vector<uint32_t> scatter_nd(NodeCtx& c) {
  const std::string reduction = c.s("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" && reduction != "min")
    c.bad("ScatterND's reduction '" + reduction + "' is none, add, mul, max or min");
  const uint32_t data = c.at(0), indices = c.at(1), updates = c.at(2);
  const Shape ds = c.m.shape(data), is = c.m.shape(indices);
  int64_t tuples;
  const uint32_t lin = linear_index(c, data, indices, &tuples);
  std::vector<int64_t> rest;
  const int64_t k = is[is.ndim() - 1];
  const uint32_t flat = flattened(c, data, k, &rest);
  std::vector<int64_t> ushape = {tuples};
  ushape.insert(ushape.end(), rest.begin(), rest.end());
  if (c.m.shape(updates).numel() != Shape(ushape).numel()) c.bad("updates do not have the shape indices.shape[:-1] + data.shape[k:]");
  const uint32_t upd = c.m.reshape(c, updates, ushape);
  // scatter_add takes an index of the updates' shape: each tuple's linear index along axis 0.
  std::vector<int64_t> lifted(ushape.size(), 1);
  lifted[0] = tuples;
  const uint32_t index = c.m.emit(c, OpId::k_expand, {c.m.reshape(c, lin, lifted)}, Attrs::of(ushape));
  const std::vector<int64_t> fshape = [&] {
    const Shape& s = c.m.shape(flat);
    return std::vector<int64_t>(s.begin(), s.end());
  }();
  uint32_t y;
  if (reduction == "mul" || reduction == "max" || reduction == "min") {
    y = scatter_reduced(c, flat, lin, upd, reduction);
  } else if (reduction == "add") {
    y = c.m.emit(c, OpId::k_scatter_add, {flat, index, upd}, Attrs::of(int64_t{0}));
  } else {
    // Written cells take the update (the spec leaves duplicate tuples undefined), others keep data.
    const DType t = c.m.dtype(data);
    const uint32_t zeros = c.m.emit(c, OpId::k_fill, {}, Attrs::of(fshape, 0.0, t));
    const uint32_t ones = c.m.emit(c, OpId::k_fill, {}, Attrs::of(ushape, 1.0, t));
    const uint32_t written = c.m.emit(c, OpId::k_gt, {c.m.emit(c, OpId::k_scatter_add, {zeros, index, ones}, Attrs::of(int64_t{0})), c.m.scalar(0, t)});
    const uint32_t values = c.m.emit(c, OpId::k_scatter_add, {zeros, index, upd}, Attrs::of(int64_t{0}));
    y = c.m.emit(c, OpId::k_where, {written, values, flat});
  }
  return {c.m.reshape(c, y, std::vector<int64_t>(ds.begin(), ds.end()))};
}

// Compress: the slices along `axis` (of the flattened input without one) whose condition is true.
// The output's extent depends on the condition's values, so they must be known when the graph is
// mapped (a constant, or an input's value at predict: NOTE [ONNX dynamic shapes]); then it is one
// index_select with a constant index.
std::vector<uint32_t> compress(NodeCtx& c) {
  uint32_t x = c.at(0);
  const Tensor cond = c.m.data(c, c.at(1), "condition (Lite maps Compress when its condition is known: a constant, or a small input's value)");
  if (cond.ndim() != 1) c.bad("condition must be 1-D");
  if (!c.has("axis")) x = c.m.reshape(c, x, {-1});
  const Shape s = c.m.shape(x);
  const int axis = normalize_axis(c, c.i("axis", 0), s.ndim());
  const std::vector<double> keep = cond.contiguous().to(DType::kFloat64).to_vector<double>();
  if ((int64_t)keep.size() > s[axis]) c.bad("condition is longer than the axis (" + std::to_string(keep.size()) + " > " + std::to_string(s[axis]) + ")");
  std::vector<int64_t> index;
  for (size_t i = 0; i < keep.size(); ++i)
    if (keep[i] != 0) index.push_back((int64_t)i);
  if (index.empty()) {
    std::vector<int64_t> shape(s.begin(), s.end());
    shape[axis] = 0;
    return {c.m.emit(c, OpId::k_fill, {}, Attrs::of(shape, 0.0, c.m.dtype(x)))};
  }
  return {c.m.take(c, x, axis, index)};
}

}  // namespace

void add_nd_index_ops(HandlerTable& t) {
  t["Compress"] = compress;
  t["GatherND"] = gather_nd;
  t["ScatterND"] = scatter_nd;
}

}  // namespace spore::onnx::detail
