// matmul_q: float32 activations times GGUF-quantized weights (NOTE [Quantized kernels] in
// docs/design.md). The weight stays in its file's block layout; the type is an attribute.
#include "describe.h"
#include "op_families.h"
#include "spore/quant.h"

namespace spore::ops {

namespace {

void infer_matmul_q(const InferArgs& a, Inference& out) {
  const Tensor &x = a.inputs[0], &w = a.inputs[1];
  const std::string& name = a.attrs.s(0);
  const std::optional<QuantType> type = parse_quant_type(name);
  if (!type)
    op_error(a.def, ErrorCode::kValue,
             "unknown weight type '" + name + "' (expected q8_0, q4_0, q4_1, q4_k, q5_k, q6_k, f16 or bf16)");
  if (x.dtype() != DType::kFloat32 || x.ndim() != 2)
    op_error(a.def, ErrorCode::kDType, "x must be float32 [m, k], got " + describe(x));
  if (w.ndim() != 2) op_error(a.def, ErrorCode::kShape, "the weight must be 2-D [n, ...], got " + describe(w));
  const int64_t k = x.shape()[1];
  if (*type == QuantType::kF16 || *type == QuantType::kBF16) {
    const DType want = *type == QuantType::kF16 ? DType::kFloat16 : DType::kBFloat16;
    if (w.dtype() != want)
      op_error(a.def, ErrorCode::kDType, "a " + name + " weight must be " + dtype_name(want) + ", got " + describe(w));
    if (w.shape()[1] != k)
      op_error(a.def, ErrorCode::kShape, "weight " + describe(w) + " does not take x " + describe(x) + " (k differs)");
  } else {
    if (w.dtype() != DType::kUInt8)
      op_error(a.def, ErrorCode::kDType, "a " + name + " weight holds raw blocks as uint8, got " + describe(w));
    const QuantFormat& f = quant_format(*type);
    if (k % f.block_size != 0)
      op_error(a.def, ErrorCode::kShape,
               "k = " + std::to_string(k) + " is not a multiple of " + name + "'s block of " +
                   std::to_string(f.block_size) + " values");
    const int64_t want = k / f.block_size * f.block_bytes;
    if (w.shape()[1] != want)
      op_error(a.def, ErrorCode::kShape,
               "a " + name + " row of k = " + std::to_string(k) + " values is " + std::to_string(want) +
                   " bytes (" + std::to_string(k / f.block_size) + " blocks), the weight has " +
                   std::to_string(w.shape()[1]) + " per row: " + describe(w));
  }
  out.outputs[0] = {Shape{x.shape()[0], w.shape()[0]}, DType::kFloat32};
  out.compute = DType::kFloat32;
}

}  // namespace

void define_quant_ops(OpTable& table) {
  OpDef& mq = define(table, OpId::k_matmul_q, 2, {{"type", AttrKind::kString}, {"ggml", AttrKind::kBool, true}});
  mq.infer = infer_matmul_q;
  mq.differentiable = false;  // the weights are frozen bytes; gradients go through dequantised copies
}

}  // namespace spore::ops
