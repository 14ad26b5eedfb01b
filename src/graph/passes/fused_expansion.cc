// Fused-group expansion (NOTE [Inference passes]): a fused_elementwise node reading a
// convolution's output is put back as its ops, so that conv fusion can absorb the per-channel
// affine ops and the clamp among them (a graph jit fused before it was exported). Programs with
// casts stay fused (a cast's attribute is a dtype the expansion would have to rebuild).
#include <vector>

#include "graph/passes/pass_util.h"
#include "ops/fused_program.h"
#include "spore/op_registry.h"

namespace spore::graph {

PassStats expand_fused_after_convolutions(Graph& g) {
  PassStats stats = start_stats("expand", g);
  std::vector<int> targets;
  for (int n = 0; n < (int)g.num_nodes(); ++n) {
    const Node& node = g.node(n);
    if (node.op() != OpId::k_fused_elementwise || node.num_outputs != 1) continue;
    bool reads_conv = false;
    for (ValueId v : g.inputs(n)) {
      const Value& val = g.value(v);
      reads_conv = reads_conv || (val.kind == ValueKind::kNode && g.node(val.node).op() == OpId::k_conv2d);
    }
    if (reads_conv) targets.push_back(n);
  }
  std::vector<bool> remove(g.num_nodes(), false);
  // Last first, so the positions of the earlier ones still hold.
  for (auto it = targets.rbegin(); it != targets.rend(); ++it) {
    const int n = *it;
    ops::FusedProgram p = ops::parse_fused_program(g.node(n).attrs.s(0));
    std::vector<ValueId> args(g.inputs(n).begin(), g.inputs(n).end());
    std::vector<DType> dts;
    for (ValueId v : args) dts.push_back(g.value(v).meta.dtype);
    ops::type_fused_program(p, dts);
    bool plain = !p.instrs.empty();
    for (const ops::FusedInstr& in : p.instrs) plain = plain && in.op != OpId::k_cast;
    if (!plain) continue;
    const ValueId result = g.outputs(n)[0];
    const Shape shape = g.value(result).meta.shape;  // every member has the group's shape (NOTE [Elementwise fusion])
    std::vector<ValueId> temp;
    int at = n;
    for (const ops::FusedInstr& in : p.instrs) {
      std::vector<ValueId> ins;
      for (int a = 0; a < in.num_args; ++a)
        ins.push_back(in.args[a] >= 0 ? args[(size_t)in.args[a]] : temp[(size_t)ops::fused_temp_index(in.args[a])]);
      const TensorMeta out{shape, in.result};
      at = g.insert_node(at, op_def(in.op), Attrs{}, ins, std::span<const TensorMeta>(&out, 1));
      remove.insert(remove.begin() + at, false);
      temp.push_back(g.outputs(at)[0]);
      ++at;
    }
    remove[(size_t)at] = true;  // the fused node, after its expansion
    g.replace_uses(result, temp.back());
    ++stats.ops_fused;
  }
  g.remove_nodes(remove);
  return finish_stats(stats, g);
}

}  // namespace spore::graph
