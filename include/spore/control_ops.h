// The results of a node of a control-flow op (while_loop, if_else), any number of them.
//
// NOTE [Control-flow results]: an ordinary op's results go through `Inference`, whose fixed array
// of Inference::kMaxOutputs keeps eager dispatch free of allocation. A control-flow node is never
// dispatched (the graph executor's LoopRunner runs its subgraphs), and an ONNX Loop may carry
// dozens of values, so its results are computed here, into a vector, by everything that plans
// such a node (Lite's importer and planner, the graph executor); the op's registry `infer` is the
// same computation for the nodes that fit the fixed array.
#pragma once
#include <span>
#include <vector>

#include "spore/op_registry.h"

namespace spore {

// At most this many results for one control-flow node (a bound for hostile files).
inline constexpr int kMaxControlResults = 4096;

// The shapes and dtypes of a node of `def` (a control-flow op) on `inputs` with `attrs`; errors
// as the op's inference raises them (kValue naming the op).
std::vector<TensorMeta> control_results(const OpDef& def, std::span<const Tensor> inputs, const Attrs& attrs);

}  // namespace spore
