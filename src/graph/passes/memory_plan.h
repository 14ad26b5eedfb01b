// Memory planning (NOTE [Memory planning] in docs/design.md): which buffer each intermediate
// value of a graph is written to, so that a compiled graph allocates its buffers once and reuses
// them by liveness, and an elementwise op may write over an input whose last use it is.
#pragma once
#include <cstdint>
#include <vector>

#include "spore/graph.h"

namespace spore::graph {

struct MemoryPlan {
  std::vector<int32_t> buffer_of;     // by ValueId: the buffer it lives in, -1 when not planned
  std::vector<int64_t> buffer_bytes;  // by buffer
  std::vector<int32_t> last_use;      // by ValueId: last node reading it (or any view of it);
                                      // num_nodes for graph outputs, -1 when never read
  int64_t planned_bytes = 0;    // sum of the buffers: the planned peak of the intermediates
  int64_t unplanned_peak = 0;   // peak of the same values each in its own allocation while live
  int in_place = 0;             // outputs that took over an input's buffer
};

// `plannable[v]`: the executor may give value v a preallocated buffer (an output a kernel writes
// in its promised dtype; not a graph input, captured value, constant, view, or graph output, nor
// anything a graph output views). Views extend the lifetime of the value they view.
MemoryPlan plan_memory(const Graph& g, const std::vector<bool>& plannable);

// Whether `op` may write its output over input `input` (same shape and dtype, last use there):
// pointwise ops whose kernels read element i before writing element i.
bool may_write_in_place(OpId op);

}  // namespace spore::graph
