// Common-subexpression elimination (NOTE [Graph passes]): two nodes with the same op, the same
// attributes and the same inputs compute the same values, so the later one's outputs are
// replaced by the earlier one's and the later node is dropped.
//
// Never merged: random ops (each node is a draw of its own, whatever its attributes), collectives
// (each is a call the other processes match, NOTE [Collective ops]), nodes that
// write inputs in place (each is an effect), nodes with subgraphs, and nodes that read or produce
// a mutable value (one some node writes in place: the same expression before and after the write
// differs).
#include <algorithm>
#include <unordered_map>

#include "graph/passes/pass_util.h"

namespace spore::graph {

namespace {

bool mergeable(const Graph& g, int i, const std::vector<std::vector<int>>& writers) {
  const Node& n = g.node(i);
  if (n.op() == OpId::k_random_uniform || n.op() == OpId::k_random_normal) return false;
  if (n.def->facts.collective) return false;
  if (n.def->writes_mask != 0 || n.num_outputs == 0 || !g.subgraphs(i).empty()) return false;
  for (ValueId v : g.inputs(n))
    if (!writers[v].empty()) return false;
  for (ValueId v : g.outputs(n))
    if (!writers[v].empty()) return false;
  return true;
}

bool same_attrs(const Attrs& a, const Attrs& b) {
  if (a.size() != b.size()) return false;
  for (int i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i])) return false;  // doubles compare by value: NaN attributes never merge
  return true;
}

size_t node_hash(const Graph& g, const Node& n) {
  size_t h = (size_t)n.op() * 0x9e3779b97f4a7c15ull;
  for (ValueId v : g.inputs(n)) h = (h ^ v) * 0x100000001b3ull;
  return h ^ n.num_inputs;
}

}  // namespace

PassStats eliminate_common_subexpressions(Graph& g) {
  PassStats stats = start_stats("cse", g);
  const auto writers = writers_of_values(g);
  std::unordered_multimap<size_t, int> seen;  // hash -> index of an earlier kept node
  std::vector<bool> remove(g.num_nodes(), false);
  for (int i = 0; i < (int)g.num_nodes(); ++i) {
    if (!mergeable(g, i, writers)) continue;
    const Node& n = g.node(i);
    const size_t h = node_hash(g, n);
    int match = -1;
    auto [lo, hi] = seen.equal_range(h);
    for (auto it = lo; it != hi && match < 0; ++it) {
      const Node& m = g.node(it->second);
      if (m.def != n.def || m.num_inputs != n.num_inputs || m.num_outputs != n.num_outputs)
        continue;
      if (!same_attrs(m.attrs, n.attrs)) continue;
      std::span<const ValueId> a = g.inputs(m), b = g.inputs(n);
      if (std::equal(a.begin(), a.end(), b.begin())) match = it->second;
    }
    if (match < 0) {
      seen.emplace(h, i);
      continue;
    }
    // Inputs were already rewritten to the surviving nodes' outputs (nodes are visited in
    // order), so chains of duplicates collapse in one sweep.
    std::span<const ValueId> keep = g.outputs(match), drop = g.outputs(i);
    for (uint32_t o = 0; o < n.num_outputs; ++o) {
      stats.bytes_saved += value_bytes(g, drop[o]);
      g.replace_uses(drop[o], keep[o]);
    }
    remove[i] = true;
  }
  g.remove_nodes(remove);
  return finish_stats(stats, g);
}

}  // namespace spore::graph
