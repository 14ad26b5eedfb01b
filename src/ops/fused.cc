// fused_elementwise: a chain or tree of elementwise ops as one node (NOTE [Elementwise fusion]).
// Its inputs are the chain's external operands (any number, broadcasting to one shape); its one
// attribute, `program`, is the chain as text (fused_program.h), so the IR writes it from the
// registry schema like any attribute and op renumbering never changes its meaning.
//
// Its backward rule replays the program: it recomputes the intermediates with the ops themselves,
// then runs each instruction's own registry backward rule from the last to the first, summing
// broadcast gradients to their operands' shapes as the tape does. So differentiating a fused node
// gives the unfused ops' gradients, and the rule is itself recordable (gradients of gradients).
#include "op_families.h"
#include "ops/fused_program.h"
#include "spore/ops.h"

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
    op_error(a.def, ErrorCode::kValue,
             "the program reads " + std::to_string(p.num_inputs) + " inputs but the node has " +
                 std::to_string(a.inputs.size()) + "; every input must be read");
  out.outputs[0] = {shape, p.instrs.back().result};
  out.compute = p.instrs.back().result;  // the kernel reads each input in its own dtype
}

Attrs instr_attrs(const FusedInstr& ins) {
  return ins.op == OpId::k_cast ? Attrs::of(ins.cast_to) : Attrs();
}

// g summed to `like`'s shape and cast to its dtype (the tape's accumulate), added to `slot`.
void accumulate(Tensor& slot, const Tensor& like, Tensor g) {
  if (g.shape() != like.shape()) g = sum_to(g, like.shape());
  if (g.dtype() != like.dtype()) g = cast(g, like.dtype());
  slot = slot.defined() ? add(slot, g) : g;
}

std::vector<Tensor> fused_backward(const BackwardArgs& b) {
  FusedProgram p = parse_fused_program(b.attrs.s(0));
  std::vector<DType> dtypes;
  for (const Tensor& t : b.inputs) dtypes.push_back(t.dtype());
  type_fused_program(p, dtypes);
  const int n = (int)p.instrs.size();
  std::vector<Tensor> value(n), grad(n), input_grads(b.inputs.size());
  auto operand = [&](int32_t arg) -> const Tensor& {
    return arg >= 0 ? b.inputs[arg] : value[fused_temp_index(arg)];
  };
  auto args_of = [&](const FusedInstr& ins) {
    std::vector<Tensor> args;
    for (int a = 0; a < ins.num_args; ++a) args.push_back(operand(ins.args[a]));
    return args;
  };
  for (int i = 0; i + 1 < n; ++i)
    value[i] = dispatch1(p.instrs[i].op, args_of(p.instrs[i]), instr_attrs(p.instrs[i]));
  value[n - 1] = b.outputs[0];
  grad[n - 1] = b.grad_outputs[0];
  for (int i = n - 1; i >= 0; --i) {
    const FusedInstr& ins = p.instrs[i];
    const OpDef& def = op_def(ins.op);
    if (!grad[i].defined() || !def.backward) continue;  // comparisons, logical ops: no gradient
    const std::vector<Tensor> args = args_of(ins);
    const Tensor outs[] = {value[i]};
    const Tensor gouts[] = {grad[i]};
    const Attrs attrs = instr_attrs(ins);
    const std::vector<Tensor> gs = def.backward(BackwardArgs{args, outs, gouts, attrs});
    for (int a = 0; a < ins.num_args && a < (int)gs.size(); ++a) {
      if (!gs[a].defined() || !is_floating(args[a].dtype())) continue;
      const int32_t arg = ins.args[a];
      accumulate(arg >= 0 ? input_grads[arg] : grad[fused_temp_index(arg)], args[a], gs[a]);
    }
  }
  return input_grads;
}

}  // namespace

void define_fused_ops(OpTable& table) {
  OpDef& d = define(table, OpId::k_fused_elementwise, -1, {{"program", AttrKind::kString}});
  d.facts = not_elementwise();
  d.infer = infer_fused;
  d.backward = fused_backward;
}

}  // namespace spore::ops
