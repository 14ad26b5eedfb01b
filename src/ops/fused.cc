// fused_elementwise: a chain or tree of elementwise ops as one node (NOTE [Elementwise fusion]).
// Its inputs are the chain's external operands (any number, broadcasting to one shape); its one
// attribute, `program`, is the chain as text (fused_program.h), so the IR writes it from the
// registry schema like any attribute and op renumbering never changes its meaning.
//
// It is not differentiable: the fusion pass runs last, after the backward graph has been built
// from the unfused ops' rules, so nothing differentiates a fused node (NOTE [Elementwise fusion]).
#include "op_families.h"
#include "ops/fused_program.h"

namespace spore::ops {

namespace {

void infer_fused(const InferArgs& a, Inference& out) {
  FusedProgram p = parse_fused_program(a.attrs.s(0));
  std::vector<DType> dtypes;
  Shape shape = a.inputs[0].shape();
  for (const Tensor& t : a.inputs) {
    dtypes.push_back(t.dtype());
    if (t.shape() != shape) shape = broadcast_shapes(shape, t.shape(), a.def.name);
  }
  type_fused_program(p, dtypes);
  if (p.num_inputs != (int)a.inputs.size())
    op_error(a.def, ErrorCode::kValue, "the program reads " + std::to_string(p.num_inputs) + " inputs but the node has " +
                                           std::to_string(a.inputs.size()) + "; every input must be read");
  out.outputs[0] = {shape, p.instrs.back().result};
  out.compute = p.instrs.back().result;  // the kernel reads each input in its own dtype
}

}  // namespace

void define_fused_ops(OpTable& table) {
  OpDef& d = define(table, OpId::k_fused_elementwise, -1, {{"program", AttrKind::kString}});
  d.infer = infer_fused;
  d.differentiable = false;
}

}  // namespace spore::ops
