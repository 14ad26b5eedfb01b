// Elementwise fusion (NOTE [Elementwise fusion]): a tree of elementwise nodes whose
// intermediates nobody else reads becomes one fused_elementwise node, which makes one pass over
// memory instead of writing and re-reading each intermediate.
//
// A node joins a group when: it is an op the fused kernel runs with the standalone kernel's own
// loop and no promotion cast (ops::fused_result_dtype agrees with the node's output dtype); its
// one output is read only by members of the group (any number of times, as in x * x or a
// diamond; a value read outside the group or returned by the graph must be materialised anyway,
// so it becomes an input of the group instead, and is not recomputed); its
// output has the group's shape (it is computed per output element; a smaller intermediate that
// broadcasts later would be recomputed per element, which we do not do); it writes nothing; and
// none of its inputs is written in place between it and the group's root, where the fused node
// runs (moving the read past the write would read the new contents).
#include <algorithm>
#include <string>

#include "graph/passes/pass_util.h"
#include "ops/fused_program.h"

namespace spore::graph {

namespace {

bool fusable(const Graph& g, int i, int64_t min_elements) {
  const Node& n = g.node(i);
  if (n.num_outputs != 1 || n.def->writes_mask != 0 || !g.subgraphs(i).empty()) return false;
  if (g.value(g.outputs(n)[0]).meta.shape.numel() < min_elements) return false;
  DType args[3];
  std::span<const ValueId> in = g.inputs(n);
  if (in.size() > 3) return false;
  for (size_t k = 0; k < in.size(); ++k) args[k] = g.value(in[k]).meta.dtype;
  const DType cast_to = n.op() == OpId::k_cast ? n.attrs.dtype(0) : DType::kFloat32;
  DType compute;
  std::optional<DType> r =
      ops::fused_result_dtype(n.op(), std::span<const DType>(args, in.size()), cast_to, compute);
  if (!r || *r != g.value(g.outputs(n)[0]).meta.dtype) return false;
  return n.def->kernel(kCpuBackend, compute) != nullptr;
}

class Fuser {
 public:
  Fuser(Graph& g, int64_t min_elements)
      : g_(g), min_elements_(min_elements), writers_(writers_of_values(g)), uses_(g.use_counts()) {}

  PassStats run() {
    PassStats stats = start_stats("fuse", g_);
    const int n = (int)g_.num_nodes();
    remove_.assign(n, false);
    taken_.assign(n, false);
    fusable_.resize(n);
    for (int i = 0; i < n; ++i) fusable_[i] = fusable(g_, i, min_elements_);
    // Roots from the last node back, so each group is as large as it can be; insertions happen
    // at the root, which only shifts nodes already visited.
    for (int r = n - 1; r >= 0; --r) {
      if (taken_[r] || !fusable_[r]) continue;
      std::vector<int> members = grow(r);
      if (members.size() >= 2) replace(members, r, stats);
    }
    g_.remove_nodes(remove_);
    return finish_stats(stats, g_);
  }

 private:
  std::vector<int> grow(int root) {
    const Shape& shape = g_.value(g_.outputs(root)[0]).meta.shape;
    std::vector<int> members{root};
    taken_[root] = true;
    // To a fixed point: a value read twice inside the group (mul a a, or a diamond) joins once
    // every one of its readers has.
    for (bool grew = true; grew;) {
      grew = false;
      for (size_t k = 0; k < members.size(); ++k) {
        for (ValueId v : g_.inputs(members[k])) {
          const Value& val = g_.value(v);
          if (val.kind != ValueKind::kNode || !writers_[v].empty()) continue;
          const int p = val.node;
          if (taken_[p] || !fusable_[p] || val.meta.shape != shape) continue;
          if (reads_within(members, v) != uses_[v]) continue;  // read outside, or a graph output
          bool moved_past_write = false;
          for (ValueId x : g_.inputs(p))
            moved_past_write = moved_past_write || written_between(writers_, x, p, root);
          if (moved_past_write) continue;
          taken_[p] = true;
          members.push_back(p);
          grew = true;
        }
      }
    }
    std::sort(members.begin(), members.end());  // node order is a topological order
    return members;
  }

  int reads_within(const std::vector<int>& members, ValueId v) const {
    int reads = 0;
    for (int m : members)
      for (ValueId x : g_.inputs(m)) reads += x == v;
    return reads;
  }

  void replace(const std::vector<int>& members, int root, PassStats& stats) {
    ops::FusedProgram program;
    std::vector<ValueId> inputs;
    std::vector<std::pair<ValueId, int>> temps;  // member output -> instruction
    for (int m : members) {
      const Node& n = g_.node(m);
      ops::FusedInstr ins;
      ins.op = n.op();
      if (ins.op == OpId::k_cast) ins.cast_to = n.attrs.dtype(0);
      ins.num_args = (int)n.num_inputs;
      for (int a = 0; a < ins.num_args; ++a) {
        const ValueId v = g_.inputs(n)[a];
        auto t =
            std::find_if(temps.begin(), temps.end(), [&](const auto& e) { return e.first == v; });
        if (t != temps.end()) {
          ins.args[a] = ops::fused_temp_ref(t->second);
          continue;
        }
        auto e = std::find(inputs.begin(), inputs.end(), v);
        ins.args[a] = (int32_t)(e - inputs.begin());
        if (e == inputs.end()) inputs.push_back(v);
      }
      temps.emplace_back(g_.outputs(n)[0], (int)program.instrs.size());
      program.instrs.push_back(ins);
      // An intermediate is no longer written to memory (nor read back).
      if (m != root) stats.bytes_saved += value_bytes(g_, g_.outputs(n)[0]);
    }
    const ValueId old_out = g_.outputs(root)[0];
    const TensorMeta meta[] = {g_.value(old_out).meta};
    const int fused = g_.insert_node(root, op_def(OpId::k_fused_elementwise),
                                     Attrs::of(ops::format_fused_program(program)), inputs, meta);
    g_.replace_uses(old_out, g_.outputs(fused)[0]);
    uses_.resize(g_.num_values(), 1);
    writers_.resize(g_.num_values());
    remove_.insert(remove_.begin() + fused, false);
    taken_.insert(taken_.begin() + fused, true);
    fusable_.insert(fusable_.begin() + fused, false);
    for (int m : members) remove_[m == root ? root + 1 : m] = true;
    stats.ops_fused += (int)members.size();
  }

  Graph& g_;
  int64_t min_elements_;
  std::vector<std::vector<int>> writers_;
  std::vector<int> uses_;
  std::vector<bool> remove_, taken_, fusable_;
};

}  // namespace

PassStats fuse_elementwise(Graph& g, int64_t min_elements) {
  return Fuser(g, min_elements).run();
}

}  // namespace spore::graph
