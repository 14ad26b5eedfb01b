// Lite's while_loop nodes on the graph library's loop runner (NOTE [Lite control flow]): the IR
// node's condition and body become graph::Graph subgraphs, which graph::LoopRunner plans and
// runs as the jit executor does, so Lite and jit run a loop with the same code.
#pragma once
#include <memory>
#include <span>
#include <string>

#include "spore/graph.h"
#include "spore/ir.h"

namespace spore::lite {

// A closed IR graph (a loop's condition or body: every value an input, a weight or a node's
// output) as a graph::Graph; its weights become constants on `device`. kUnsupported for a
// symbolic dimension (a loop's subgraphs have fixed shapes, NOTE [Control flow]).
std::shared_ptr<const graph::Graph> to_graph(const ir::Graph& g, Device device, const std::string& label);

// A graph of one node: `node` (a while_loop) over inputs like `inputs`, its subgraphs converted.
std::shared_ptr<const graph::Graph> loop_host(const ir::Node& node, std::span<const Tensor> inputs, Device device,
                                              const std::string& label);

}  // namespace spore::lite
