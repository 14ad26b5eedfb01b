// A file's IR graph as the graph library's graph for one input signature (NOTE [Lite executor]):
// what Lite runs through the graph passes and the graph executor, as jit does.
#pragma once
#include <span>
#include <string>
#include <vector>

#include "spore/graph.h"
#include "spore/ir.h"

namespace spore::lite {

// `weights`: by IR value id, the bound tensor of each weight (undefined for the others), already
// on `device`; they become constants. Each node is planned (PlannedOp) on placeholders of the
// given input shapes, and its computed outputs are checked against what the file declares:
// kFormat naming the node on a mismatch of count, dtype, rank or a fixed extent. A while_loop
// node keeps its condition and body as subgraphs, its bound at most kMaxLoopIterations.
graph::Graph plan_graph(const ir::Graph& g, std::span<const Tensor> weights, const std::vector<Shape>& input_shapes,
                        Device device, const std::string& label);

}  // namespace spore::lite
