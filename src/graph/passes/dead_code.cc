// Dead-code elimination (NOTE [Graph passes]): drops the nodes none of whose outputs is read by a
// kept node or is a graph output. A node that writes an input in place (an optimizer update,
// assign) is an effect, not a value: it is always kept, and with it everything it reads.
#include "graph/passes/pass_util.h"

namespace spore::graph {

PassStats eliminate_dead_code(Graph& g) {
  PassStats stats = start_stats("dce", g);
  std::vector<bool> live_value(g.num_values(), false);
  for (ValueId v : g.graph_outputs()) live_value[v] = true;
  std::vector<bool> remove(g.num_nodes(), false);
  for (int i = (int)g.num_nodes() - 1; i >= 0; --i) {
    const Node& n = g.node(i);
    bool live = n.def->writes_mask != 0;
    for (ValueId v : g.outputs(n)) live = live || live_value[v];
    if (!live) {
      remove[i] = true;
      for (ValueId v : g.outputs(n)) stats.bytes_saved += value_bytes(g, v);
      continue;
    }
    for (ValueId v : g.inputs(n)) live_value[v] = true;
  }
  g.remove_nodes(remove);
  return finish_stats(stats, g);
}

}  // namespace spore::graph
