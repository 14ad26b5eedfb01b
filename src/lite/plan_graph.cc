// A file's IR graph as a graph::Graph for one input signature (plan_graph.h).
#include "lite/plan_graph.h"

#include <algorithm>

#include "lite/loop_graph.h"
#include "spore/control_ops.h"
#include "spore/dispatch_plan.h"
#include "spore/error.h"

namespace spore::lite {

namespace {

std::string node_label(const std::string& label, size_t n, const ir::Node& node) {
  return label + ": node " + std::to_string(n) + " (" + node.def->name + ")";
}

// A node with subgraphs: a while_loop's results are its state (the first num_state inputs' shapes
// and dtypes, NOTE [Lite control flow]), an if_else states its results in its attributes; either
// may have more than an op's fixed output array (NOTE [Control-flow results]). The bound a
// while_loop's file gives is capped.
Attrs loop_outputs(const ir::Node& node, std::span<const Tensor> ins, const std::string& where,
                   std::vector<TensorMeta>& outs) {
  try {
    outs = control_results(*node.def, ins, node.attrs);
  } catch (const Error& e) {
    throw Error(ErrorCode::kFormat, where + ": " + e.what());
  }
  if (outs.size() != node.outputs.size())
    throw Error(ErrorCode::kFormat, where + ": the node makes " + std::to_string(outs.size()) + " results and names " +
                                        std::to_string(node.outputs.size()) + " outputs");
  if (node.def->id == OpId::k_if_else) return node.attrs;
  const int64_t bound = node.attrs.i(1) > 0 ? std::min(node.attrs.i(1), kMaxLoopIterations) : kMaxLoopIterations;
  return Attrs::of(node.attrs.i(0), bound);
}

}  // namespace

graph::Graph plan_graph(const ir::Graph& g, std::span<const Tensor> weights, const std::vector<Shape>& input_shapes,
                        Device device, const std::string& label) {
  graph::Graph out;
  const size_t nv = g.values.size();
  std::vector<graph::ValueId> id(nv, graph::kNoValue);
  std::vector<Tensor> example(nv);  // what each value's planning reads: placeholders and weights
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const ir::Value& v = g.values[g.inputs[i]];
    id[g.inputs[i]] = out.add_input({input_shapes[i], v.dtype}, v.name);
    example[g.inputs[i]] = Tensor::empty(input_shapes[i], v.dtype, device);
  }
  for (size_t v = 0; v < nv; ++v)
    if (id[v] == graph::kNoValue && weights[v].defined()) {
      id[v] = out.add_constant(weights[v], g.values[v].name);
      example[v] = weights[v];
    }
  // Last reader of each node value: its placeholder is freed after it (graph outputs never are).
  std::vector<int> last(nv, -1);
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (uint32_t v : g.nodes[n].inputs) last[v] = (int)n;
  for (uint32_t v : g.outputs) last[v] = (int)g.nodes.size();
  std::vector<Tensor> ins;
  std::vector<graph::ValueId> in_ids;
  std::vector<TensorMeta> metas;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const ir::Node& node = g.nodes[n];
    const std::string where = node_label(label, n, node);
    ins.clear();
    in_ids.clear();
    metas.clear();
    for (uint32_t v : node.inputs) {
      if (v >= nv || id[v] == graph::kNoValue)
        throw Error(ErrorCode::kFormat, where + " reads value " + std::to_string(v) + " before any node makes it");
      ins.push_back(example[v]);
      in_ids.push_back(id[v]);
    }
    int made;
    if (!node.subgraphs.empty()) {
      const Attrs attrs = loop_outputs(node, ins, where, metas);
      made = out.add_node(*node.def, attrs, in_ids, metas);
      std::vector<std::shared_ptr<const graph::Graph>> subs;
      for (const ir::Graph& s : node.subgraphs) subs.push_back(to_graph(s, device, label));
      out.set_subgraphs(made, std::move(subs));
    } else {
      const PlannedOp op(node.def->id, ins, node.attrs);
      const Inference& inf = op.plan().inference;
      if (inf.num_outputs != (int)node.outputs.size())
        throw Error(ErrorCode::kFormat, where + " names " + std::to_string(node.outputs.size()) + " outputs; the op makes " +
                                            std::to_string(inf.num_outputs));
      for (int o = 0; o < inf.num_outputs; ++o) {
        const ir::Value& declared = g.values[node.outputs[o]];
        const TensorMeta& got = inf.outputs[o];
        bool same = got.dtype == declared.dtype && got.shape.ndim() == (int)declared.dims.size();
        for (int d = 0; same && d < got.shape.ndim(); ++d)
          same = declared.dims[d].symbolic() || declared.dims[d].extent == got.shape[d];
        if (!same)
          throw Error(ErrorCode::kFormat, where + " computes " + dtype_name(got.dtype) + got.shape.str() +
                                              " where the file declares value " + std::to_string(node.outputs[o]) + " as " +
                                              dtype_name(declared.dtype) + " with " + std::to_string(declared.dims.size()) +
                                              " dimensions");
        metas.push_back(got);
      }
      made = out.add_node(*node.def, node.attrs, in_ids, metas);
    }
    const auto outs = out.outputs(made);
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      id[node.outputs[o]] = outs[o];
      example[node.outputs[o]] = Tensor::empty(metas[o].shape, metas[o].dtype, device);
    }
    for (uint32_t v : node.inputs)
      if (last[v] == (int)n && g.values[v].kind == ir::ValueKind::kNode) example[v] = Tensor();
  }
  std::vector<graph::ValueId> results;
  for (uint32_t v : g.outputs) {
    if (v >= nv || id[v] == graph::kNoValue)
      throw Error(ErrorCode::kFormat, label + ": the graph returns value " + std::to_string(v) + ", which no node makes");
    results.push_back(id[v]);
  }
  out.set_outputs(std::move(results));
  return out;
}

}  // namespace spore::lite
