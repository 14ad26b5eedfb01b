// The matmul op: NumPy's matmul semantics (NOTE [Matmul shapes]).
//
// NOTE [Matmul shapes]
// A 1-D first operand [K] acts as a [1, K] row and a 1-D second operand [K] as a [K, 1] column;
// the added axis is removed from the result. The last two axes are the matrices ([M, K] and
// [K, N]); all leading axes are batch axes and broadcast like elementwise ops. The result is
// batch + [M, N]. 0-d operands are refused (NumPy does too): use mul for scaling.
// Both inputs join type promotion; bool is refused (a logical "or of ands" is not what anyone
// means by matmul of masks, and summing bools as integers would be a silent surprise).
#include <string>

#include "describe.h"
#include "op_families.h"
#include "spore/ops.h"

namespace spore::ops {

namespace {

void infer_matmul(const InferArgs& args, Inference& out) {
  const OpDef& def = args.def;
  const Tensor& a = args.inputs[0];
  const Tensor& b = args.inputs[1];
  if (a.ndim() == 0 || b.ndim() == 0)
    op_error(def, ErrorCode::kShape,
             "operands must have at least 1 dimension, got " + describe(a) + " and " + describe(b) +
                 "; use mul to scale by a 0-d tensor");
  const DType compute = promote_types(a.dtype(), b.dtype());
  if (compute == DType::kBool)
    op_error(def, ErrorCode::kDType,
             "bool operands are not supported (" + describe(a) + ", " + describe(b) +
                 "); cast them to an integer or floating dtype first");

  const Shape& as = a.shape();
  const Shape& bs = b.shape();
  const int64_t k_a = as[as.ndim() - 1];
  const int64_t k_b = bs.ndim() == 1 ? bs[0] : bs[bs.ndim() - 2];
  if (k_a != k_b)
    op_error(def, ErrorCode::kShape,
             "inner dimensions differ: a " + describe(a) + " has " + std::to_string(k_a) +
                 " columns but b " + describe(b) + " has " + std::to_string(k_b) +
                 " rows; a's last axis must equal b's " +
                 (bs.ndim() == 1 ? "only axis" : "second-to-last axis"));

  Shape batch_a, batch_b;
  for (int i = 0; i + 2 < as.ndim(); ++i) batch_a.push_back(as[i]);
  for (int i = 0; i + 2 < bs.ndim(); ++i) batch_b.push_back(bs[i]);
  Shape shape;
  try {
    shape = broadcast_shapes(batch_a, batch_b, def.name);
  } catch (const Error&) {
    op_error(def, ErrorCode::kShape,
             "batch axes " + batch_a.str() + " of a " + describe(a) + " and " + batch_b.str() +
                 " of b " + describe(b) + " do not broadcast; each pair must be equal or 1");
  }
  if (as.ndim() >= 2) shape.push_back(as[as.ndim() - 2]);
  if (bs.ndim() >= 2) shape.push_back(bs[bs.ndim() - 1]);
  out.outputs[0] = {shape, compute};
  out.compute = compute;
}


// NOTE [Matmul gradient]
// With a, b the operands as matrices (a 1-D operand given back its unit axis: [1, K] or [K, 1])
// and g the output gradient with the removed axes restored, ga = g @ b^T and gb = a^T @ g; the
// unit axes are then removed again. Both have the broadcast batch axes of the output; the tape's
// sum_to reduces them to each operand's own batch shape. Written with ops, like every rule.
std::vector<Tensor> matmul_backward(const BackwardArgs& args) {
  const Tensor &a = args.inputs[0], &b = args.inputs[1], &g = args.grad_outputs[0];
  const bool a_vec = a.ndim() == 1, b_vec = b.ndim() == 1;
  const Tensor a2 = a_vec ? reshape(a, {1, a.shape()[0]}) : a;
  const Tensor b2 = b_vec ? reshape(b, {b.shape()[0], 1}) : b;
  std::vector<int64_t> gs = g.shape().to_vector();
  if (b_vec) gs.push_back(1);
  if (a_vec) gs.insert(gs.end() - 1, 1);
  const Tensor g2 = Shape(gs) == g.shape() ? g : reshape(g, gs);

  // Drops the unit axis at `axis` (-2 or -1) that a 1-D operand was given.
  auto drop_axis = [](const Tensor& t, int axis) {
    std::vector<int64_t> s = t.shape().to_vector();
    s.erase(s.end() + axis);
    return reshape(t, s);
  };
  Tensor ga, gb;
  if (args.needs(0) && is_floating(a.dtype())) {
    ga = matmul(g2, transpose(b2, -1, -2));
    if (a_vec) ga = drop_axis(ga, -2);
  }
  if (args.needs(1) && is_floating(b.dtype())) {
    // A column-major b (Dense's x @ W^T, a transposed view of a row-major weight) gets its
    // gradient in the same layout, (g^T a)^T: the transpose's rule then hands the weight a
    // contiguous gradient instead of a strided one that the optimizer would have to copy.
    const bool b_col_major = b2.ndim() == 2 && b2.strides()[0] == 1 && b2.shape()[1] > 1;
    gb = b_col_major ? transpose(matmul(transpose(g2, -1, -2), a2), -1, -2) : matmul(transpose(a2, -1, -2), g2);
    if (b_vec) gb = drop_axis(gb, -1);
  }
  return {ga, gb};
}

}  // namespace

void define_matmul_ops(OpTable& table) {
  OpDef& d = define(table, OpId::k_matmul, 2);
  d.facts = not_elementwise();
  d.promote_mask = 0b11;
  d.infer = &infer_matmul;
  d.backward = &matmul_backward;
}

}  // namespace spore::ops
