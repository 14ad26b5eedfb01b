// The pass pipeline (NOTE [Graph passes]). Placeholder until the passes land: runs nothing.
#include "graph/passes/passes.h"

namespace spore::graph {

std::vector<PassStats> run_passes(Graph& g, const PassOptions& options) {
  (void)g;
  (void)options;
  return {};
}

}  // namespace spore::graph
