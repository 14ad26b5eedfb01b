// Dispatch as plan and run (NOTE [Dispatch plans] in docs/design.md).
//
// Planning does everything about a call that depends only on its signature (the op, the inputs'
// dtypes, shapes and device, the attributes, the precision mode): the checks, the inference, the
// kernel, the precision fallback with the casts it inserts and the outputs it casts back, and the
// buffers to allocate. Running allocates those buffers and calls the kernel. Eager dispatch is
// plan + run through the same two functions, so a graph executor that plans a node once and runs
// it many times does exactly what eager mode would.
#pragma once
#include <span>
#include <vector>

#include "spore/op_registry.h"

namespace spore {

struct DispatchPlan {
  const OpDef* def = nullptr;
  // Outputs as the op promises them (shapes, dtypes), their device, and the inferred compute dtype.
  Inference inference;
  // The kernel to call; nullptr for view ops, whose outputs OpDef::view builds over input 0.
  KernelFn kernel = nullptr;
  // The dtype the kernel runs in: inference.compute, or the stand-in the precision mode chose.
  DType compute = DType::kFloat32;
  // The precision mode stood `compute` in for inference.compute: outputs promised in
  // inference.compute are produced in `compute` and cast back.
  bool fallback = false;
  // A kernel selector chose the kernel: inputs go in as they are (NOTE [Kernel selection]).
  bool selected = false;
  // Bit i: input i is cast to `compute` before the kernel (bit 31: input 31 and every later one).
  uint32_t cast_mask = 0;

  bool is_view() const { return kernel == nullptr; }
  int num_outputs() const { return inference.num_outputs; }
  bool casts_input(int i) const { return ((cast_mask >> (i < 32 ? i : 31)) & 1u) != 0; }
  // The dtype the kernel writes output o in (differs from the promised one under a fallback).
  DType kernel_output_dtype(int o) const {
    DType t = inference.outputs[o].dtype;
    return fallback && t == inference.compute ? compute : t;
  }
};

// Plans a call; raises every error eager dispatch would (arity, attributes, devices, the op's
// inference, a missing kernel under the precision mode), naming the op.
void plan_dispatch(OpId id, std::span<const Tensor> inputs, const Attrs& attrs, DispatchPlan& plan);

// NOTE [Precision modes]: the dtype an op runs in on `backend` when `want` has no kernel there
// (lossless widenings first, then narrowings by precision); `want` itself when nothing suits.
DType fallback_dtype(const OpDef& def, int backend, DType want);

// A call planned once and run many times (a graph executor's node). Each run checks that its
// inputs have the planned signature (count, dtypes, shapes, device) and raises kValue naming the
// op when they do not; observers see every run as an ordinary dispatch.
class PlannedOp {
 public:
  PlannedOp(OpId id, std::span<const Tensor> inputs, Attrs attrs = {});
  TensorList run(std::span<const Tensor> inputs) const;
  TensorList run(std::initializer_list<Tensor> inputs) const {
    return run(std::span<const Tensor>(inputs.begin(), inputs.size()));
  }
  // A graph executor's run (NOTE [Graph executor]): the caller guarantees the inputs have the
  // planned signature (it checked its graph's inputs once); each defined entry of `outputs` is a
  // contiguous tensor of the planned shape and kernel dtype that the kernel writes instead of a
  // fresh allocation (ignored for views and under a precision fallback); an empty `outputs`
  // allocates them all, as run does. Observers see the run.
  TensorList run_into(std::span<const Tensor> inputs, std::span<const Tensor> outputs) const;
  const DispatchPlan& plan() const { return plan_; }
  // Replaces attributes the plan does not depend on (an optimizer's step count and learning rate).
  void set_attrs(const Attrs& attrs) { attrs_ = attrs; }
  const Attrs& attrs() const { return attrs_; }

 private:
  DispatchPlan plan_;
  Attrs attrs_;
  std::vector<TensorMeta> signature_;
};

}  // namespace spore
