// Shared by the IR writer and reader (NOTE [Model IR]).
#pragma once
#include <string>

#include "spore/ir.h"

namespace spore::ir {

// Subgraphs within subgraphs: a bound, so a hostile file cannot recurse the reader off its stack.
inline constexpr int kMaxSubgraphDepth = 16;

// The graph's invariants (ids in range, each value made once and before use, op arity, attribute
// kinds against the registry's schema, data matching dtype and shape); kFormat naming the first
// broken one, prefixed by `where` (the file).
void check_graph(const Graph& g, const std::string& where, int depth = 0);

}  // namespace spore::ir
