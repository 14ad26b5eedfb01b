// Indexing ops: gather, index_select, embedding.
//
// NOTE [Index checks]
// Indices are int32 or int64 (never promoted: the kernel is keyed by the data's dtype and reads
// either index type). Every index must lie in [0, extent): negative indices are an error, as in
// torch.gather (no Python-style wrap-around, which would hide off-by-one bugs). The kernels check
// all indices before reading through any of them and raise kIndex naming the first bad value in
// row-major order and its position, so the message does not depend on the thread count.
#include <string>

#include "op_families.h"

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

}  // namespace

void define_index_ops(OpTable& table) {
  OpDef& gather = define(table, OpId::k_gather, 2, {{"axis", AttrKind::kInt}});
  gather.infer = infer_gather;

  OpDef& index_select = define(table, OpId::k_index_select, 2, {{"axis", AttrKind::kInt}});
  index_select.infer = infer_index_select;

  OpDef& embedding = define(table, OpId::k_embedding, 2);
  embedding.infer = infer_embedding;
}

}  // namespace spore::ops
