// Shared analyses of the passes (pass_util.h).
#include "graph/passes/pass_util.h"

namespace spore::graph {

std::vector<std::vector<int>> writers_of_values(const Graph& g) {
  std::vector<std::vector<int>> writers(g.num_values());
  for (int i = 0; i < (int)g.num_nodes(); ++i) {
    const Node& n = g.node(i);
    if (n.def->writes_mask == 0) continue;
    std::span<const ValueId> in = g.inputs(n);
    for (int k = 0; k < (int)in.size(); ++k)
      if (n.def->writes(k)) writers[in[k]].push_back(i);
  }
  return writers;
}

bool written_between(const std::vector<std::vector<int>>& writers, ValueId v, int after,
                     int before) {
  for (int w : writers[v])
    if (w > after && w < before) return true;
  return false;
}

Readers::Readers(const Graph& g) : of(g.num_values()), returned(g.num_values(), false) {
  for (int i = 0; i < (int)g.num_nodes(); ++i)
    for (ValueId v : g.inputs(i)) of[v].push_back(i);
  for (ValueId v : g.graph_outputs()) returned[v] = true;
}

bool scalar_constant(const Graph& g, ValueId v, const std::vector<std::vector<int>>& writers, double& x) {
  if (!is_constant(g, v, writers) || g.value(v).tensor.numel() != 1) return false;
  x = g.value(v).tensor.to(DType::kFloat64).contiguous().to_vector<double>()[0];
  return true;
}

}  // namespace spore::graph
