// matmul_q: float32 activations times GGUF-quantized weights (NOTE [Quantized kernels] and NOTE
// [Quantization types] in docs/design.md). The weight stays in its file's block layout; its type
// is an integer attribute, the ggml type id, whose row in the one table (include/spore/quant.h)
// gives the geometry checked here and the kernel the backend registered for it.
#include "describe.h"
#include "op_families.h"
#include "spore/llm.h"
#include "spore/quant.h"

namespace spore::ops {

namespace {

// The optional layout attribute (NOTE [Repacked weights]): kRows8 only for the types the packed
// kernels take, with float32 activations (the float64 reference product reads GGUF rows:
// unpack_quant_rows gives them back). Returns the weight rows one tensor row holds (1 or 8).
int64_t rows_per_tensor_row(const InferArgs& a, const QuantTraits& t, const Tensor& x) {
  const int64_t layout = a.attrs.size() > 2 ? a.attrs.i(2) : 0;
  if (layout == (int64_t)QuantLayout::kRows) return 1;
  if (layout != (int64_t)QuantLayout::kRows8)
    op_error(a.def, ErrorCode::kValue, "layout " + std::to_string(layout) + " is not 0 (GGUF rows) or 1 (8-row groups)");
  if (!quant_repackable(t.type, 8))
    op_error(a.def, ErrorCode::kValue, "layout 1 (8-row groups) takes q4_0, iq4_nl, q5_0 or q8_0 weights, got " + std::string(t.key));
  if (x.dtype() != DType::kFloat32)
    op_error(a.def, ErrorCode::kDType,
             "layout 1 (8-row groups) takes float32 x, got " + describe(x) + " (unpack_quant_rows gives GGUF rows back)");
  return 8;
}

void infer_matmul_q(const InferArgs& a, Inference& out) {
  const Tensor &x = a.inputs[0], &w = a.inputs[1];
  const int64_t id = a.attrs.i(0);
  const QuantTraits* t = id >= 0 && id < kNumGgmlTypes ? find_quant_traits((uint32_t)id) : nullptr;
  if (!t || t->activations == QuantActivations::kNone)
    op_error(a.def, ErrorCode::kValue,
             "weight type " + (t ? std::string(t->key) : "id " + std::to_string(id)) +
                 " has no quantized product (expected one of " + matmul_q_type_list() + ")");
  const std::string name = t->key;
  // float64: the exact dequantised product, the reference of the gradient check (NOTE [LLM gradients]).
  if ((x.dtype() != DType::kFloat32 && x.dtype() != DType::kFloat64) || x.ndim() != 2)
    op_error(a.def, ErrorCode::kDType, "x must be float32 (or float64) [m, k], got " + describe(x));
  if (w.ndim() != 2) op_error(a.def, ErrorCode::kShape, "the weight must be 2-D [n, ...], got " + describe(w));
  const int64_t k = x.shape()[1];
  const int64_t per = rows_per_tensor_row(a, *t, x);
  if (!t->quantized()) {
    if (w.dtype() != t->dtype)
      op_error(a.def, ErrorCode::kDType, "a " + name + " weight must be " + dtype_name(t->dtype) + ", got " + describe(w));
    if (w.shape()[1] != k)
      op_error(a.def, ErrorCode::kShape, "weight " + describe(w) + " does not take x " + describe(x) + " (k differs)");
  } else {
    if (w.dtype() != DType::kUInt8)
      op_error(a.def, ErrorCode::kDType, "a " + name + " weight holds raw blocks as uint8, got " + describe(w));
    if (k % t->block_size != 0)
      op_error(a.def, ErrorCode::kShape,
               "k = " + std::to_string(k) + " is not a multiple of " + name + "'s block of " +
                   std::to_string(t->block_size) + " values");
    const int64_t want = k / t->block_size * t->block_bytes * per;
    if (w.shape()[1] != want)
      op_error(a.def, ErrorCode::kShape,
               "a " + name + " row of k = " + std::to_string(k) + " values is " + std::to_string(want / per) +
                   " bytes (" + std::to_string(k / t->block_size) + " blocks" +
                   (per > 1 ? ", a group of 8 rows " + std::to_string(want) + " bytes" : std::string()) +
                   "), the weight has " + std::to_string(w.shape()[1]) + " per row: " + describe(w));
  }
  out.outputs[0] = {Shape{x.shape()[0], per * w.shape()[0]}, x.dtype()};
  out.compute = x.dtype();
}

// NOTE [LLM gradients]: dx = dy W with W the dequantised weight (matmul_q_grad, which dequantises
// tiles of rows and never the whole matrix). The activations' q8 rounding is passed straight
// through (its derivative is zero almost everywhere, useless for training). The weight is frozen.
std::vector<Tensor> matmul_q_backward(const BackwardArgs& b) {
  if (b.needs(1))
    throw Error(ErrorCode::kUnsupported,
                "matmul_q: no gradient for the " + std::string(quant_traits((GgmlType)b.attrs.i(0)).key) + " weight: a quantized base weight is frozen "
                "(gradients flow through it to x, not into it); train an adapter beside it (LoRA), or "
                "dequantize the weight to a float tensor and use matmul to train it");
  if (!b.needs(0)) return {Tensor(), Tensor()};
  // A repacked weight goes back to GGUF rows for the gradient kernel (training through a
  // repacked base weight is rare; the copy is per call).
  const bool packed = b.attrs.size() > 2 && b.attrs.i(2) == (int64_t)QuantLayout::kRows8;
  const Tensor w = packed ? unpack_quant_rows(b.inputs[1], (GgmlType)b.attrs.i(0)) : b.inputs[1];
  const Tensor in[] = {b.grad_outputs[0], w};
  return {dispatch(OpId::k_matmul_q_grad, in, Attrs::of(b.attrs.i(0)))[0], Tensor()};
}

// matmul_q_grad(dy [m, n], w [n, ...]; type) -> dx [m, k] in dy's dtype (float32 or float64):
// the weight checked as matmul_q checks it, k read off its row length.
void infer_matmul_q_grad(const InferArgs& a, Inference& out) {
  const Tensor &g = a.inputs[0], &w = a.inputs[1];
  if ((g.dtype() != DType::kFloat32 && g.dtype() != DType::kFloat64) || g.ndim() != 2)
    op_error(a.def, ErrorCode::kDType, "dy must be float32 or float64 [m, n], got " + describe(g));
  const int64_t id = a.attrs.i(0);
  const QuantTraits* t = id >= 0 && id < kNumGgmlTypes ? find_quant_traits((uint32_t)id) : nullptr;
  int64_t k = w.ndim() == 2 ? w.shape()[1] : 0;
  if (t && t->quantized() && w.dtype() == DType::kUInt8 && k % t->block_bytes == 0)
    k = k / t->block_bytes * t->block_size;
  // An empty x [0, k] stands for dx: infer_matmul_q then checks the type and the weight's layout.
  const Tensor in[] = {Tensor::empty(Shape{0, k}, g.dtype(), g.device()), w};
  infer_matmul_q(InferArgs{a.def, in, a.attrs}, out);
  if (g.shape()[1] != w.shape()[0])
    op_error(a.def, ErrorCode::kShape, "dy must be [m, n] with the weight's n rows, got " + describe_inputs(a.inputs));
  out.outputs[0] = {Shape{g.shape()[0], k}, g.dtype()};
}

}  // namespace

void define_quant_ops(OpTable& table) {
  OpDef& mq = define(table, OpId::k_matmul_q, 2, {{"type", AttrKind::kInt}, {"ggml", AttrKind::kBool, true}, {"layout", AttrKind::kInt, true}});
  mq.facts = not_elementwise();
  mq.infer = infer_matmul_q;
  mq.backward = &matmul_q_backward;  // for x only (NOTE [LLM gradients])

  OpDef& mg = define(table, OpId::k_matmul_q_grad, 2, {{"type", AttrKind::kInt}});
  mg.facts = not_elementwise();
  mg.infer = infer_matmul_q_grad;
  mg.differentiable = false;  // a gradient kernel, as conv2d_grad_input
}

}  // namespace spore::ops
