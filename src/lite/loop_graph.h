// Lite's while_loop nodes on the graph library's loop runner (NOTE [Lite control flow]): the IR
// node's condition and body become graph::Graph subgraphs, which graph::LoopRunner plans and
// runs as the jit executor does, so Lite and jit run a loop with the same code.
#pragma once
#include <memory>
#include <string>

#include "spore/graph.h"
#include "spore/ir.h"

namespace spore::lite {

// A closed IR graph (a loop's condition or body: every value an input, a weight or a node's
// output) as a graph::Graph; its weights become constants on `device`. kUnsupported for a
// symbolic dimension (a loop's subgraphs have fixed shapes, NOTE [Control flow]).
std::shared_ptr<const graph::Graph> to_graph(const ir::Graph& g, Device device, const std::string& label);

// A loop in a file runs at most this many times in Lite, whatever bound the file gives (none, or
// a larger one): a file cannot make predict spin forever. Beyond it predict fails with kValue.
inline constexpr int64_t kMaxLoopIterations = int64_t{1} << 20;

}  // namespace spore::lite
