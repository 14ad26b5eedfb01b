// IR loops as graph-library graphs (loop_graph.h, NOTE [Lite control flow]).
#include "lite/loop_graph.h"

#include <vector>

#include "spore/error.h"

namespace spore::lite {

namespace {

TensorMeta meta_of(const ir::Value& v, const std::string& label) {
  std::vector<int64_t> dims;
  for (const ir::Dim& d : v.dims) {
    if (d.symbolic())
      throw Error(ErrorCode::kUnsupported, label + ": a loop subgraph's value '" + v.name + "' has the symbolic dimension '" +
                                               d.symbol + "'; Lite runs loops whose subgraphs have fixed shapes");
    dims.push_back(d.extent);
  }
  return {Shape(dims), v.dtype};
}

}  // namespace

std::shared_ptr<const graph::Graph> to_graph(const ir::Graph& g, Device device, const std::string& label) {
  auto out = std::make_shared<graph::Graph>();
  std::vector<graph::ValueId> id(g.values.size(), graph::kNoValue);
  for (uint32_t in : g.inputs) id[in] = out->add_input(meta_of(g.values[in], label), g.values[in].name);
  auto bind = [&](uint32_t v) {
    if (id[v] != graph::kNoValue) return id[v];
    const ir::Value& value = g.values[v];
    if (!value.data.defined())
      throw Error(ErrorCode::kFormat, label + ": a loop subgraph reads value " + std::to_string(v) +
                                          " before any node makes it (the subgraph is not closed)");
    id[v] = out->add_constant(device == Device::cpu() ? value.data : value.data.to(device), value.name);
    return id[v];
  };
  std::vector<graph::ValueId> ins;
  std::vector<TensorMeta> outs;
  for (const ir::Node& n : g.nodes) {
    ins.clear();
    outs.clear();
    for (uint32_t v : n.inputs) ins.push_back(bind(v));
    for (uint32_t v : n.outputs) outs.push_back(meta_of(g.values[v], label));
    const int node = out->add_node(*n.def, n.attrs, ins, outs);
    const auto made = out->outputs(node);
    for (size_t k = 0; k < n.outputs.size(); ++k) id[n.outputs[k]] = made[k];
    if (!n.subgraphs.empty()) {
      std::vector<std::shared_ptr<const graph::Graph>> subs;
      for (const ir::Graph& s : n.subgraphs) subs.push_back(to_graph(s, device, label));
      out->set_subgraphs(node, std::move(subs));
    }
  }
  std::vector<graph::ValueId> results;
  for (uint32_t v : g.outputs) results.push_back(bind(v));
  out->set_outputs(std::move(results));
  out->validate();
  return out;
}

}  // namespace spore::lite
