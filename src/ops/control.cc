// Control-flow ops (NOTE [Control flow] in docs/design.md): while_loop, a node that carries its
// condition and body as subgraphs, and if_else, one that carries a then and an else branch and runs
// the one its predicate selects (NOTE [Lite control flow]: ONNX's If on a computed condition). It has no kernel: spore::while_loop runs it eagerly as the
// ops of its body, and the graph executor runs the subgraphs of a traced node. The definition
// here is what the IR, the passes and Lite read: its attributes, its outputs (the final state,
// shaped like the initial state) and that it carries two subgraphs and has no backward rule.
#include <string>

#include "op_families.h"
#include "spore/control_ops.h"

namespace spore::ops {

namespace {

// Inputs: the initial state (the first `num_state`), then the tensors the condition and body
// read but were not given (NOTE [Control flow]). Outputs: the final state, like the initial one.
std::vector<TensorMeta> while_loop_results(const InferArgs& a) {
  const int64_t n_state = a.attrs.i(0), max_iterations = a.attrs.i(1);
  const int64_t n_in = (int64_t)a.inputs.size();
  if (n_state < 1 || n_state > n_in)
    op_error(a.def, ErrorCode::kValue, "num_state is " + std::to_string(n_state) + " for " + std::to_string(n_in) +
                                           " inputs; it must be between 1 and the number of inputs");
  if (n_state > kMaxControlResults)
    op_error(a.def, ErrorCode::kValue, "a loop carries at most " + std::to_string(kMaxControlResults) + " state tensors, got " +
                                           std::to_string(n_state));
  if (max_iterations < 0)
    op_error(a.def, ErrorCode::kValue, "max_iterations is " + std::to_string(max_iterations) + "; use 0 for no bound");
  std::vector<TensorMeta> out;
  for (int64_t i = 0; i < n_state; ++i) out.push_back({a.inputs[(size_t)i].shape(), a.inputs[(size_t)i].dtype()});
  return out;
}

// Inputs: the predicate (one element, bool), then the tensors both branches read (each branch
// subgraph takes them, in order). The branches may compute anything, so the node states its
// results: `out_dtypes` (one DType code per output) and `out_shapes` (per output its rank, then
// its extents); both branches must return exactly these (the executor checks).
std::vector<TensorMeta> if_else_results(const InferArgs& a) {
  if (a.inputs.empty() || a.inputs[0].numel() != 1 || a.inputs[0].dtype() != DType::kBool)
    op_error(a.def, ErrorCode::kValue, "the predicate (input 0) must be one bool element");
  const std::vector<int64_t>& dtypes = a.attrs.ints(0);
  const std::vector<int64_t>& shapes = a.attrs.ints(1);
  if (dtypes.empty() || (int64_t)dtypes.size() > kMaxControlResults)
    op_error(a.def, ErrorCode::kValue, "an if_else node returns 1 to " + std::to_string(kMaxControlResults) +
                                           " tensors, not " + std::to_string(dtypes.size()));
  std::vector<TensorMeta> out;
  size_t at = 0;
  for (size_t o = 0; o < dtypes.size(); ++o) {
    if (dtypes[o] < 0 || dtypes[o] >= kNumDTypes) op_error(a.def, ErrorCode::kValue, "out_dtypes names no dtype");
    if (at >= shapes.size() || shapes[at] < 0 || shapes[at] > kMaxDims || at + 1 + (size_t)shapes[at] > shapes.size())
      op_error(a.def, ErrorCode::kValue, "out_shapes does not hold a rank and extents for output " + std::to_string(o));
    std::vector<int64_t> dims(shapes.begin() + (std::ptrdiff_t)at + 1, shapes.begin() + (std::ptrdiff_t)(at + 1 + shapes[at]));
    for (int64_t d : dims)
      if (d < 0) op_error(a.def, ErrorCode::kValue, "out_shapes has a negative extent");
    at += 1 + (size_t)shapes[at];
    out.push_back({Shape(dims), (DType)dtypes[o]});
  }
  if (at != shapes.size()) op_error(a.def, ErrorCode::kValue, "out_shapes holds more values than its outputs need");
  return out;
}

// The registry's inference: the same results, for the nodes that fit Inference's fixed array
// (a traced while_loop; dispatching either op is refused anyway, it has no kernel).
void infer_control(const InferArgs& a, Inference& out) {
  const std::vector<TensorMeta> results = control_results(a.def, a.inputs, a.attrs);
  if ((int)results.size() > Inference::kMaxOutputs)
    op_error(a.def, ErrorCode::kValue, "a node with " + std::to_string(results.size()) + " results (over " +
                                           std::to_string(Inference::kMaxOutputs) +
                                           ") is planned by control_results and run by the graph executor only");
  out.num_outputs = (int)results.size();
  for (size_t o = 0; o < results.size(); ++o) out.outputs[o] = results[o];
  out.compute = a.def.id == OpId::k_while_loop ? a.inputs[0].dtype() : results[0].dtype;
}

}  // namespace

}  // namespace spore::ops

namespace spore {

// NOTE [Control-flow results]
std::vector<TensorMeta> control_results(const OpDef& def, std::span<const Tensor> inputs, const Attrs& attrs) {
  const InferArgs a{def, inputs, attrs};
  if (def.id == OpId::k_while_loop) return ops::while_loop_results(a);
  if (def.id == OpId::k_if_else) return ops::if_else_results(a);
  op_error(def, ErrorCode::kInternal, "control_results: not a control-flow op");
}

}  // namespace spore

namespace spore::ops {

void define_control_ops(OpTable& table) {
  OpDef& d = define(table, OpId::k_while_loop, -1, {{"num_state", AttrKind::kInt}, {"max_iterations", AttrKind::kInt}});
  d.facts = not_elementwise();
  d.infer = infer_control;
  d.num_subgraphs = 2;  // the condition, then the body
  // No reverse mode through a data-dependent trip count (JAX refuses it too): the tape reports
  // the op by name when a gradient reaches it (NOTE [Control flow]).
  d.differentiable = false;

  OpDef& e = define(table, OpId::k_if_else, -1, {{"out_dtypes", AttrKind::kInts}, {"out_shapes", AttrKind::kInts}});
  e.facts = not_elementwise();
  e.infer = infer_control;
  e.num_subgraphs = 2;  // the then branch, then the else branch
  e.differentiable = false;
}

}  // namespace spore::ops
