// Definitions of the elementwise ops: schema, promotion and inference (NOTE [Op registry]).
// Shapes broadcast like NumPy; dtypes follow NOTE [Type promotion] in include/spore/dtype.h.
//
// NOTE [Elementwise dtypes]
// * add sub mul pow maximum minimum: the promoted dtype. On bool, add/maximum are "or" and
//   mul/minimum are "and" (PyTorch); sub and pow of bools are errors. div is true division:
//   integer and bool operands give float32.
// * eq ne lt le gt ge compute in the promoted dtype and return bool.
// * logical_and, logical_or, logical_not and where's condition take any dtype (nonzero is true)
//   and are not promoted; they return bool (where: the promoted dtype of x and y).
// * exp log sqrt rsqrt sin cos tanh sigmoid erf gelu gelu_tanh silu: floating dtypes keep theirs;
//   integer and bool inputs compute in float32 (PyTorch).
// * neg abs relu relu6 keep integer dtypes. neg, relu and relu6 of bool are errors; abs of bool
//   is the identity.
// * cast converts to any dtype (NOTE [Float to integer casts]); copy keeps the dtype.
#include "op_families.h"

namespace spore::ops {

namespace {

constexpr uint32_t kFirst = 1u, kFirstTwo = 3u;

bool is_op(const OpDef& d, OpId id) { return d.id == id; }

void infer_binary(const InferArgs& a, Inference& out) {
  const Tensor& x = a.inputs[0];
  const Tensor& y = a.inputs[1];
  Shape shape = x.shape() == y.shape() ? x.shape() : broadcast_shapes(x.shape(), y.shape(), a.def.name);
  DType t = promote_types(x.dtype(), y.dtype());
  if (t == DType::kBool && (is_op(a.def, OpId::k_sub) || is_op(a.def, OpId::k_pow)))
    op_error(a.def, ErrorCode::kDType,
             std::string("is not defined for bool tensors (inputs ") + describe_inputs(a.inputs) +
                 "); use logical_and/logical_or/logical_not on bools, or cast them to an integer dtype first");
  if (is_op(a.def, OpId::k_div) && !is_floating(t)) t = DType::kFloat32;
  out.outputs[0] = {shape, t};
  out.compute = t;
}

void infer_compare(const InferArgs& a, Inference& out) {
  const Tensor& x = a.inputs[0];
  const Tensor& y = a.inputs[1];
  Shape shape = x.shape() == y.shape() ? x.shape() : broadcast_shapes(x.shape(), y.shape(), a.def.name);
  out.outputs[0] = {shape, DType::kBool};
  out.compute = promote_types(x.dtype(), y.dtype());
}

void infer_logical(const InferArgs& a, Inference& out) {
  const Tensor& x = a.inputs[0];
  const Tensor& y = a.inputs[1];
  Shape shape = x.shape() == y.shape() ? x.shape() : broadcast_shapes(x.shape(), y.shape(), a.def.name);
  out.outputs[0] = {shape, DType::kBool};
  out.compute = DType::kBool;  // the kernel reads each input's own dtype as truth values
}

void infer_unary_float(const InferArgs& a, Inference& out) {
  const Tensor& x = a.inputs[0];
  DType t = is_floating(x.dtype()) ? x.dtype() : DType::kFloat32;
  out.outputs[0] = {x.shape(), t};
  out.compute = t;
}

void infer_unary_keep(const InferArgs& a, Inference& out) {
  const Tensor& x = a.inputs[0];
  if (x.dtype() == DType::kBool && !is_op(a.def, OpId::k_abs))
    op_error(a.def, ErrorCode::kDType,
             "is not defined for bool tensors (input " + describe_inputs(a.inputs) +
                 "); use logical_not for bools, or cast to an integer or float dtype first");
  out.outputs[0] = {x.shape(), x.dtype()};
  out.compute = x.dtype();
}

void infer_logical_not(const InferArgs& a, Inference& out) {
  out.outputs[0] = {a.inputs[0].shape(), DType::kBool};
  out.compute = a.inputs[0].dtype();
}

void infer_where(const InferArgs& a, Inference& out) {
  const Tensor& c = a.inputs[0];
  const Tensor& x = a.inputs[1];
  const Tensor& y = a.inputs[2];
  Shape shape = broadcast_shapes(broadcast_shapes(c.shape(), x.shape(), a.def.name), y.shape(),
                                 a.def.name);
  DType t = promote_types(x.dtype(), y.dtype());
  out.outputs[0] = {shape, t};
  out.compute = t;
}

void infer_cast(const InferArgs& a, Inference& out) {
  out.outputs[0] = {a.inputs[0].shape(), a.attrs.dtype(0)};
  out.compute = a.inputs[0].dtype();  // the kernel is keyed by the source dtype
}

}  // namespace

void define_elementwise_ops(OpTable& table) {
  for (OpId id : {OpId::k_add, OpId::k_sub, OpId::k_mul, OpId::k_div, OpId::k_pow,
                  OpId::k_maximum, OpId::k_minimum}) {
    OpDef& d = define(table, id, 2);
    d.promote_mask = kFirstTwo;
    d.infer = infer_binary;
  }
  for (OpId id : {OpId::k_eq, OpId::k_ne, OpId::k_lt, OpId::k_le, OpId::k_gt, OpId::k_ge}) {
    OpDef& d = define(table, id, 2);
    d.promote_mask = kFirstTwo;
    d.infer = infer_compare;
  }
  for (OpId id : {OpId::k_logical_and, OpId::k_logical_or}) {
    OpDef& d = define(table, id, 2);
    d.infer = infer_logical;
  }
  for (OpId id : {OpId::k_exp, OpId::k_log, OpId::k_sqrt, OpId::k_rsqrt, OpId::k_sin, OpId::k_cos,
                  OpId::k_tanh, OpId::k_sigmoid, OpId::k_erf, OpId::k_gelu, OpId::k_gelu_tanh,
                  OpId::k_silu}) {
    OpDef& d = define(table, id, 1);
    d.promote_mask = kFirst;
    d.infer = infer_unary_float;
  }
  for (OpId id : {OpId::k_neg, OpId::k_abs, OpId::k_relu, OpId::k_relu6}) {
    OpDef& d = define(table, id, 1);
    d.promote_mask = kFirst;
    d.infer = infer_unary_keep;
  }
  define(table, OpId::k_logical_not, 1).infer = infer_logical_not;
  {
    OpDef& d = define(table, OpId::k_where, 3);
    d.promote_mask = 6u;  // x and y; the condition keeps its dtype
    d.infer = infer_where;
  }
  define(table, OpId::k_cast, 1, {{"dtype", AttrKind::kDType}}).infer = infer_cast;
  define(table, OpId::k_copy, 1).infer = infer_same_as_input;
}

}  // namespace spore::ops
