// Constant folding (NOTE [Graph passes]): a node whose inputs are all constants, or a
// deterministic creation op (fill, arange), is run once now by ordinary dispatch and its outputs
// become kConstant values, so later calls of the graph skip it.
//
// Never folded: random ops (each call must draw anew); collectives (each run is a call the other
// processes match, NOTE [Collective ops]); nodes that write inputs in place; nodes
// with subgraphs; nodes reading or making a value some node writes in place; and results larger
// than the caller's bound (PassOptions::max_folded_bytes), so folding never trades a cheap op for
// a large tensor the graph must hold for its whole life. kCaptured values are not constants: they are bound by reference and change
// between calls (an optimizer updates its parameters in place), so folding them would bake in
// their first values.
#include "graph/passes/pass_util.h"
#include "spore/error.h"

namespace spore::graph {

namespace {

bool foldable(const Graph& g, int i, const std::vector<std::vector<int>>& writers, int64_t max_bytes) {
  const Node& n = g.node(i);
  const OpId op = n.op();
  if (op == OpId::k_random_uniform || op == OpId::k_random_normal) return false;
  if (n.def->facts.collective) return false;
  if (n.def->writes_mask != 0 || n.num_outputs == 0 || !g.subgraphs(i).empty()) return false;
  if (n.num_inputs == 0 && op != OpId::k_fill && op != OpId::k_arange) return false;
  for (ValueId v : g.inputs(n))
    if (g.value(v).kind != ValueKind::kConstant || !writers[v].empty()) return false;
  int64_t bytes = 0;
  for (ValueId v : g.outputs(n)) {
    if (!writers[v].empty()) return false;
    bytes += value_bytes(g, v);
  }
  return bytes <= max_bytes;
}

}  // namespace

PassStats fold_constants(Graph& g, int64_t max_bytes, bool copy_views) {
  PassStats stats = start_stats("fold", g);
  auto writers = writers_of_values(g);
  std::vector<bool> remove(g.num_nodes(), false);
  std::vector<Tensor> args;
  for (int i = 0; i < (int)g.num_nodes(); ++i) {
    if (!foldable(g, i, writers, max_bytes)) continue;
    const Node& n = g.node(i);
    args.clear();
    for (ValueId v : g.inputs(n)) args.push_back(g.value(v).tensor);
    TensorList results;
    try {
      results = dispatch(n.op(), args, n.attrs);
    } catch (const Error&) {
      continue;  // the op rejects these inputs: leave it, so the call raises the error as eagerly
    }
    std::span<const ValueId> outs = g.outputs(n);
    bool same_meta = results.size() == (int)outs.size();
    for (int o = 0; same_meta && o < results.size(); ++o)
      same_meta = results[o].shape() == g.value(outs[o]).meta.shape &&
                  results[o].dtype() == g.value(outs[o]).meta.dtype;
    if (!same_meta) continue;  // a precision mode or device changed what the op makes: keep it
    for (int o = 0; o < results.size(); ++o) {
      // A view of a constant (reshape, permute) is copied so the constant owns its storage,
      // unless the caller keeps it as the op made it (PassOptions::fold_copies_views).
      Tensor value = n.def->view && copy_views ? results[o].clone() : results[o];
      g.replace_uses(outs[o], g.add_constant(value, std::string(n.def->name) + "_folded"));
    }
    writers.resize(g.num_values());  // the new constants: written by no node
    remove[i] = true;
  }
  g.remove_nodes(remove);
  return finish_stats(stats, g);
}

}  // namespace spore::graph
