// Indexing ops: gather, index_select, embedding, scatter_add, and their backward rules.
//
// NOTE [Index checks]
// Indices are int32 or int64 (never promoted: the kernel is keyed by the data's dtype and reads
// either index type). Every index must lie in [0, extent): negative indices are an error, as in
// torch.gather (no Python-style wrap-around, which would hide off-by-one bugs). The kernels check
// all indices before reading through any of them and raise kIndex naming the first bad value in
// row-major order and its position, so the message does not depend on the thread count.
//
// NOTE [Index gradients]
// Every index op's gradient is a scatter_add into zeros: gather routes each output element back
// to the element it read, and repeated indices make several outputs read one element, whose
// gradient is then their sum. index_select and embedding are gathers whose index is broadcast
// along the other axes, so their rules expand the index (a stride-0 view, no copy) to the
// gradient's shape and reuse the same scatter_add. scatter_add's kernel adds in index order
// whatever the thread count, so gradients are bit-identical from run to run. Indices carry no
// gradient (the rules return an undefined tensor for them).
#include <string>

#include "op_families.h"
#include "spore/ops.h"

namespace spore::ops {

namespace {

void check_index_dtype(const OpDef& def, const Tensor& index, const char* what,
                       std::span<const Tensor> inputs) {
  if (index.dtype() != DType::kInt32 && index.dtype() != DType::kInt64)
    op_error(def, ErrorCode::kDType, std::string(what) + " must be int32 or int64, got " +
                                         dtype_name(index.dtype()) + " (inputs " + describe_inputs(inputs) +
                                         "); cast it with cast(index, DType::kInt64)");
}

// gather(x, index; axis): out[i][j][k] = x[i][index[i][j][k]][k] for axis 1. index has x's rank
// and no dimension larger than x's (except along axis); the output has index's shape.
void infer_gather(const InferArgs& a, Inference& out) {
  const Tensor& x = a.inputs[0];
  const Tensor& index = a.inputs[1];
  check_index_dtype(a.def, index, "index", a.inputs);
  const int axis = normalize_axis(a.attrs.i(0), x.ndim(), a.def.name);
  if (index.ndim() != x.ndim())
    op_error(a.def, ErrorCode::kShape, "index must have the rank of x; got x " + x.shape().str() +
                                           " and index " + index.shape().str());
  for (int d = 0; d < x.ndim(); ++d)
    if (d != axis && index.shape()[d] > x.shape()[d])
      op_error(a.def, ErrorCode::kShape, "index " + index.shape().str() + " is larger than x " +
                                             x.shape().str() + " at dimension " + std::to_string(d) +
                                             " (only the gather axis " + std::to_string(axis) + " may differ)");
  out.outputs[0] = {index.shape(), x.dtype()};
  out.compute = x.dtype();
}

// index_select(x, index; axis): the slices of x at the (1-D) indices along axis.
void infer_index_select(const InferArgs& a, Inference& out) {
  const Tensor& x = a.inputs[0];
  const Tensor& index = a.inputs[1];
  check_index_dtype(a.def, index, "index", a.inputs);
  if (x.ndim() == 0)
    op_error(a.def, ErrorCode::kShape, "x is 0-d; index_select needs at least one axis");
  const int axis = normalize_axis(a.attrs.i(0), x.ndim(), a.def.name);
  if (index.ndim() != 1)
    op_error(a.def, ErrorCode::kShape, "index must be 1-D, got shape " + index.shape().str());
  Shape s = x.shape();
  s[axis] = index.shape()[0];
  out.outputs[0] = {s, x.dtype()};
  out.compute = x.dtype();
}

// embedding(ids, table): rows of table [vocab, dim] for ids of any shape -> ids.shape + [dim].
void infer_embedding(const InferArgs& a, Inference& out) {
  const Tensor& ids = a.inputs[0];
  const Tensor& table = a.inputs[1];
  check_index_dtype(a.def, ids, "ids", a.inputs);
  if (table.ndim() != 2)
    op_error(a.def, ErrorCode::kShape, "table must be 2-D [vocab, dim], got shape " + table.shape().str());
  if (ids.ndim() >= kMaxDims)
    op_error(a.def, ErrorCode::kShape, "ids " + ids.shape().str() + " have " + std::to_string(ids.ndim()) +
                                           " dimensions; the result would exceed " + std::to_string(kMaxDims));
  Shape s = ids.shape();
  s.push_back(table.shape()[1]);
  out.outputs[0] = {s, table.dtype()};
  out.compute = table.dtype();
}

// scatter_add(x, index, src; axis): a copy of x with out[..., index[p], ...] += src[p] along axis
// for every position p of index. Like torch: index has x's rank, is no larger than src anywhere
// (it selects a leading block of src) and no larger than x off the axis.
void infer_scatter_add(const InferArgs& a, Inference& out) {
  const Tensor& x = a.inputs[0];
  const Tensor& index = a.inputs[1];
  const Tensor& src = a.inputs[2];
  check_index_dtype(a.def, index, "index", a.inputs);
  if (src.dtype() != x.dtype())
    op_error(a.def, ErrorCode::kDType, "src is " + std::string(dtype_name(src.dtype())) + " but x is " +
                                           dtype_name(x.dtype()) + " (inputs " + describe_inputs(a.inputs) +
                                           "); cast src to x's dtype");
  const int axis = normalize_axis(a.attrs.i(0), x.ndim(), a.def.name);
  if (index.ndim() != x.ndim() || src.ndim() != x.ndim())
    op_error(a.def, ErrorCode::kShape, "x, index and src must have the same rank; got x " + x.shape().str() +
                                           ", index " + index.shape().str() + " and src " + src.shape().str());
  for (int d = 0; d < x.ndim(); ++d) {
    if (index.shape()[d] > src.shape()[d])
      op_error(a.def, ErrorCode::kShape, "index " + index.shape().str() + " is larger than src " +
                                             src.shape().str() + " at dimension " + std::to_string(d));
    if (d != axis && index.shape()[d] > x.shape()[d])
      op_error(a.def, ErrorCode::kShape, "index " + index.shape().str() + " is larger than x " +
                                             x.shape().str() + " at dimension " + std::to_string(d) +
                                             " (only the scatter axis " + std::to_string(axis) + " may differ)");
  }
  out.outputs[0] = {x.shape(), x.dtype()};
  out.compute = x.dtype();
}

// ---- backward rules (NOTE [Index gradients]) ------------------------------------------------
Tensor zeros_for(const Shape& shape, const Tensor& like) {
  return full(shape.to_vector(), 0.0, like.dtype(), like.device());
}

std::vector<Tensor> gather_backward(const BackwardArgs& b) {
  const Tensor &x = b.inputs[0], &index = b.inputs[1], &g = b.grad_outputs[0];
  return {scatter_add(zeros_for(x.shape(), g), b.attrs.i(0), index, g), Tensor()};
}

std::vector<Tensor> index_select_backward(const BackwardArgs& b) {
  const Tensor &x = b.inputs[0], &index = b.inputs[1], &g = b.grad_outputs[0];
  const int axis = normalize_axis(b.attrs.i(0), x.ndim(), "index_select");
  std::vector<int64_t> line(x.ndim(), 1);
  line[axis] = index.shape()[0];
  Tensor wide = expand(reshape(index, line), g.shape().to_vector());
  return {scatter_add(zeros_for(x.shape(), g), axis, wide, g), Tensor()};
}

std::vector<Tensor> embedding_backward(const BackwardArgs& b) {
  const Tensor &ids = b.inputs[0], &table = b.inputs[1], &g = b.grad_outputs[0];
  const int64_t n = ids.numel(), dim = table.shape()[1];
  Tensor rows = expand(reshape(ids, {n, 1}), {n, dim});
  return {Tensor(), scatter_add(zeros_for(table.shape(), g), 0, rows, reshape(g, {n, dim}))};
}

// x's gradient passes through; src's is read back at the same indices. Elements of src outside
// index's extent were never added, so their gradient is zero: the gathered block is padded
// with zeros one dimension at a time.
std::vector<Tensor> scatter_add_backward(const BackwardArgs& b) {
  const Tensor &index = b.inputs[1], &src = b.inputs[2], &g = b.grad_outputs[0];
  const int64_t axis = b.attrs.i(0);
  Tensor gs = gather(g, axis, index);
  for (int d = 0; d < src.ndim(); ++d) {
    if (gs.shape()[d] == src.shape()[d]) continue;
    Shape padded = gs.shape();
    padded[d] = src.shape()[d];
    gs = slice_scatter(zeros_for(padded, g), gs, d, 0, gs.shape()[d]);
  }
  return {g, Tensor(), gs};
}

}  // namespace

void define_index_ops(OpTable& table) {
  OpDef& gather = define(table, OpId::k_gather, 2, {{"axis", AttrKind::kInt}});
  gather.facts = not_elementwise();
  gather.infer = infer_gather;
  gather.backward = gather_backward;

  OpDef& index_select = define(table, OpId::k_index_select, 2, {{"axis", AttrKind::kInt}});
  index_select.facts = not_elementwise();
  index_select.infer = infer_index_select;
  index_select.backward = index_select_backward;

  OpDef& embedding = define(table, OpId::k_embedding, 2);
  embedding.facts = not_elementwise();
  embedding.infer = infer_embedding;
  embedding.backward = embedding_backward;

  // x and src join promotion (they share one dtype) so that a precision fallback casts both.
  OpDef& scatter = define(table, OpId::k_scatter_add, 3, {{"axis", AttrKind::kInt}});
  scatter.facts = not_elementwise();
  scatter.promote_mask = 0b101;
  scatter.infer = infer_scatter_add;
  scatter.backward = scatter_add_backward;
}

}  // namespace spore::ops
