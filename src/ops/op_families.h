// Internal: each op family defines its ops into the table (src/ops/<family>.cc), and shared
// helpers for inference functions.
#pragma once
#include <array>

#include "spore/op_registry.h"

namespace spore::ops {

using OpTable = std::array<OpDef, kNumOps>;

// Starts the definition of `id`; the family fills in the rest, its facts included (NOTE [Op facts]).
OpDef& define(OpTable& table, OpId id, int num_inputs, std::vector<AttrSpec> attrs = {});

// The facts of an op that is not elementwise: never fused, never written in place, no
// one-to-one ONNX op (its ONNX mapping, if any, is written by hand in the writer and the reader).
inline OpFacts not_elementwise() {
  OpFacts f;
  f.fusion = Fusion::kNone;
  f.in_place = InPlace::kNo;
  f.onnx = "";
  return f;
}

void define_elementwise_ops(OpTable& table);
void define_reduce_ops(OpTable& table);
void define_matmul_ops(OpTable& table);
void define_shape_ops(OpTable& table);
void define_index_ops(OpTable& table);
void define_norm_ops(OpTable& table);
void define_creation_ops(OpTable& table);
void define_conv_ops(OpTable& table);
void define_optim_ops(OpTable& table);
void define_fused_ops(OpTable& table);  // fused_elementwise
void define_llm_ops(OpTable& table);    // llm.cc
void define_quant_ops(OpTable& table);  // quant.cc
void define_int8_ops(OpTable& table);   // int8.cc: dynamic_quant_matmul
void define_control_ops(OpTable& table);  // control.cc: while_loop
void define_collective_ops(OpTable& table);  // collective.cc (NOTE [Collective ops])

// Fills the core's hooks for Tensor's copy, cast and copy_ (NOTE [Core hooks]); the registry
// calls it when it is built, so that linking the registry links the hooks.
void install_tensor_hooks();

// Shared inference pieces.
void infer_same_as_input(const InferArgs& a, Inference& out);  // one output like input 0
// Normalised, sorted, de-duplicated reduction axes; empty `axes` means all axes.
std::vector<int> reduce_axes(const OpDef& def, const std::vector<int64_t>& axes, int ndim);
Shape reduced_shape(const Shape& in, const std::vector<int>& axes, bool keepdims);

}  // namespace spore::ops
