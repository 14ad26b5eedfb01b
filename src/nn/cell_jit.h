// Graph mode for Cells: the Cell-aware layer over the graph library (NOTE [Graph library
// layering]). The graph library (src/graph) compiles functions of tensors and knows nothing of
// Cells; this side turns a Cell into such a function.
#pragma once
#include "spore/nn/cell.h"

namespace spore::nn {

// ExecMode::kGraph's Cell::operator(): the cell's forward compiled on first call and cached in
// the cell.
Tensor call_compiled(Cell& cell, const Tensor& x);

}  // namespace spore::nn
