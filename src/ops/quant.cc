// matmul_q: float32 activations times GGUF-quantized weights (NOTE [Quantized kernels] and NOTE
// [Quantization types] in docs/design.md). The weight stays in its file's block layout; its type
// is an integer attribute, the ggml type id, whose row in the one table (include/spore/quant.h)
// gives the geometry checked here and the kernel the backend registered for it.
#include "describe.h"
#include "op_families.h"
#include "spore/quant.h"

namespace spore::ops {

namespace {

void infer_matmul_q(const InferArgs& a, Inference& out) {
  const Tensor &x = a.inputs[0], &w = a.inputs[1];
  const int64_t id = a.attrs.i(0);
  const QuantTraits* t = id >= 0 && id < kNumGgmlTypes ? find_quant_traits((uint32_t)id) : nullptr;
  if (!t || t->activations == QuantActivations::kNone)
    op_error(a.def, ErrorCode::kValue,
             "weight type " + (t ? std::string(t->key) : "id " + std::to_string(id)) +
                 " has no quantized product (expected one of " + matmul_q_type_list() + ")");
  const std::string name = t->key;
  if (x.dtype() != DType::kFloat32 || x.ndim() != 2)
    op_error(a.def, ErrorCode::kDType, "x must be float32 [m, k], got " + describe(x));
  if (w.ndim() != 2) op_error(a.def, ErrorCode::kShape, "the weight must be 2-D [n, ...], got " + describe(w));
  const int64_t k = x.shape()[1];
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
    const int64_t want = k / t->block_size * t->block_bytes;
    if (w.shape()[1] != want)
      op_error(a.def, ErrorCode::kShape,
               "a " + name + " row of k = " + std::to_string(k) + " values is " + std::to_string(want) +
                   " bytes (" + std::to_string(k / t->block_size) + " blocks), the weight has " +
                   std::to_string(w.shape()[1]) + " per row: " + describe(w));
  }
  out.outputs[0] = {Shape{x.shape()[0], w.shape()[0]}, DType::kFloat32};
  out.compute = DType::kFloat32;
}

}  // namespace

void define_quant_ops(OpTable& table) {
  OpDef& mq = define(table, OpId::k_matmul_q, 2, {{"type", AttrKind::kInt}, {"ggml", AttrKind::kBool, true}});
  mq.infer = infer_matmul_q;
  mq.differentiable = false;  // the weights are frozen bytes; gradients go through dequantised copies
}

}  // namespace spore::ops
