// Dead-code elimination (NOTE [Graph passes]): drops the nodes none of whose outputs is read by a
// kept node or is a graph output. A node that writes an input in place (an optimizer update,
// assign), or whose subgraphs do, is an effect, not a value: it is always kept, and with it
// everything it reads. So is a collective (NOTE [Collective ops]): the other processes wait for
// this one's call whether or not its result is read here.
#include "graph/passes/pass_util.h"

namespace spore::graph {

namespace {

// A node is an effect when it writes an input, or when one of its subgraphs (cond's branches,
// while_loop's body) holds such a node at any depth.
bool has_effects(const Graph& g, int i) {
  if (g.node(i).def->writes_mask != 0 || g.node(i).def->facts.collective) return true;
  for (const auto& sub : g.subgraphs(i))
    for (int k = 0; sub && k < (int)sub->num_nodes(); ++k)
      if (has_effects(*sub, k)) return true;
  return false;
}

}  // namespace

PassStats eliminate_dead_code(Graph& g) {
  PassStats stats = start_stats("dce", g);
  std::vector<bool> live_value(g.num_values(), false);
  for (ValueId v : g.graph_outputs()) live_value[v] = true;
  std::vector<bool> remove(g.num_nodes(), false);
  for (int i = (int)g.num_nodes() - 1; i >= 0; --i) {
    const Node& n = g.node(i);
    bool live = has_effects(g, i);
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
