// Constants sealed (NOTE [Sealed constants]): every constant of the graph that no node writes is
// made read-only, so kernels may keep what they derive from it (NOTE [Derived forms]).
#include <unordered_set>

#include "graph/passes/pass_util.h"

namespace spore::graph {

PassStats seal_constants(Graph& g) {
  PassStats stats = start_stats("seal", g);
  const auto writers = writers_of_values(g);
  // A storage some node writes through any of its views stays writable, whichever view is sealed.
  std::unordered_set<const Storage*> written;
  for (ValueId v = 0; v < g.num_values(); ++v)
    if (g.value(v).kind == ValueKind::kConstant && g.value(v).tensor.defined() && !writers[v].empty())
      written.insert(g.value(v).tensor.storage());
  for (ValueId v = 0; v < g.num_values(); ++v) {
    const Tensor& t = g.value(v).tensor;
    if (g.value(v).kind != ValueKind::kConstant || !t.defined() || written.count(t.storage())) continue;
    if (t.storage()->writable()) ++stats.constants_changed;
    t.storage()->make_read_only();
  }
  return finish_stats(stats, g);
}

}  // namespace spore::graph
