// Control-flow ops (NOTE [Control flow] in docs/design.md): while_loop, a node that carries its
// condition and body as subgraphs. It has no kernel: spore::while_loop runs it eagerly as the
// ops of its body, and the graph executor runs the subgraphs of a traced node. The definition
// here is what the IR, the passes and Lite read: its attributes, its outputs (the final state,
// shaped like the initial state) and that it carries two subgraphs and has no backward rule.
#include <string>

#include "op_families.h"

namespace spore::ops {

namespace {

// Inputs: the initial state (the first `num_state`), then the tensors the condition and body
// read but were not given (NOTE [Control flow]). Outputs: the final state, like the initial one.
void infer_while_loop(const InferArgs& a, Inference& out) {
  const int64_t n_state = a.attrs.i(0), max_iterations = a.attrs.i(1);
  const int64_t n_in = (int64_t)a.inputs.size();
  if (n_state < 1 || n_state > n_in)
    op_error(a.def, ErrorCode::kValue, "num_state is " + std::to_string(n_state) + " for " + std::to_string(n_in) +
                                           " inputs; it must be between 1 and the number of inputs");
  if (n_state > Inference::kMaxOutputs)
    op_error(a.def, ErrorCode::kValue, "a compiled loop carries at most " + std::to_string(Inference::kMaxOutputs) +
                                           " state tensors, got " + std::to_string(n_state) +
                                           "; stack related state into one tensor (spore::stack) or run eagerly");
  if (max_iterations < 0)
    op_error(a.def, ErrorCode::kValue, "max_iterations is " + std::to_string(max_iterations) + "; use 0 for no bound");
  out.num_outputs = (int)n_state;
  for (int i = 0; i < (int)n_state; ++i) out.outputs[i] = {a.inputs[i].shape(), a.inputs[i].dtype()};
  out.compute = a.inputs[0].dtype();
}

}  // namespace

void define_control_ops(OpTable& table) {
  OpDef& d = define(table, OpId::k_while_loop, -1, {{"num_state", AttrKind::kInt}, {"max_iterations", AttrKind::kInt}});
  d.facts = not_elementwise();
  d.infer = infer_while_loop;
  d.num_subgraphs = 2;  // the condition, then the body
  // No reverse mode through a data-dependent trip count (JAX refuses it too): the tape reports
  // the op by name when a gradient reaches it (NOTE [Control flow]).
  d.differentiable = false;
}

}  // namespace spore::ops
