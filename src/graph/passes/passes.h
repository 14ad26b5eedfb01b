// The graph passes (NOTE [Graph passes] in docs/design.md): each rewrites a Graph in place and
// says what it did. One file per pass in this folder; run_passes is the pipeline jit uses.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "spore/graph.h"

namespace spore::graph {

struct PassStats {
  std::string pass;
  int nodes_before = 0, nodes_after = 0;
  int nodes_removed = 0;
  int ops_fused = 0;        // nodes folded into fused nodes
  int64_t bytes_saved = 0;  // intermediate bytes no longer written to memory
};

struct PassOptions {
  bool dce = true, cse = true, fold_constants = true, simplify = true, fuse = true;
};

// Each pass: rewrites `g` (which validates before and after) and returns its statistics.
PassStats eliminate_dead_code(Graph& g);
PassStats eliminate_common_subexpressions(Graph& g);
PassStats fold_constants(Graph& g);
PassStats simplify_algebra(Graph& g);
PassStats fuse_elementwise(Graph& g);

// The pipeline, in a fixed order; one PassStats per pass that ran.
std::vector<PassStats> run_passes(Graph& g, const PassOptions& options = {});

}  // namespace spore::graph
