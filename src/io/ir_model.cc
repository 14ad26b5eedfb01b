// The IR's in-memory model: its invariants (checked by the writer before it writes and by the
// reader after it parses, so neither trusts the other) and what each IR version can hold.
#include <string>

#include "io/ir_checks.h"
#include "spore/control_ops.h"
#include "spore/error.h"
#include "spore/ir.h"

namespace spore::ir {

const char* value_kind_name(ValueKind k) {
  switch (k) {
    case ValueKind::kInput: return "input";
    case ValueKind::kParameter: return "parameter";
    case ValueKind::kConstant: return "constant";
    case ValueKind::kNode: return "node";
  }
  return "?";
}

bool Value::has_symbolic_dims() const {
  for (const Dim& d : dims)
    if (d.symbolic()) return true;
  return false;
}

Shape Value::fixed_shape() const {
  std::vector<int64_t> extents;
  for (const Dim& d : dims) {
    if (d.symbolic())
      throw Error(ErrorCode::kValue, "IR value '" + name + "' has the symbolic dimension '" + d.symbol +
                                         "': give it an extent first (resize the input)");
    extents.push_back(d.extent);
  }
  return Shape(extents);
}

namespace {

std::string value_label(const Value& v, size_t id) {
  return "value " + std::to_string(id) + (v.name.empty() ? "" : " ('" + v.name + "')");
}

void graph_needs(const Graph& g, std::pair<uint32_t, std::string>& need) {
  auto want = [&](uint32_t version, std::string why) {
    if (version > need.first) need = {version, std::move(why)};
  };
  for (size_t i = 0; i < g.values.size(); ++i) {
    const Value& v = g.values[i];
    for (const Dim& d : v.dims)
      if (d.symbolic()) want(2, value_label(v, i) + " has the symbolic dimension '" + d.symbol + "'");
    if (v.dtype == DType::kBFloat16) want(2, value_label(v, i) + " is bfloat16");
  }
  for (const Node& n : g.nodes) {
    if (!n.subgraphs.empty()) want(2, std::string("node '") + n.def->name + "' has subgraphs");
    for (const Graph& s : n.subgraphs) graph_needs(s, need);
  }
}

}  // namespace

std::pair<uint32_t, std::string> required_version(const Model& model) {
  std::pair<uint32_t, std::string> need{1, {}};
  graph_needs(model.graph, need);
  return need;
}

void check_graph(const Graph& g, const std::string& where, int depth) {
  auto fail = [&](const std::string& what) { throw Error(ErrorCode::kFormat, where + ": " + what); };
  if (depth > kMaxSubgraphDepth)
    fail("subgraphs nest deeper than " + std::to_string(kMaxSubgraphDepth));
  const size_t nv = g.values.size();
  std::vector<uint8_t> defined(nv, 0), produced(nv, 0);
  for (size_t i = 0; i < nv; ++i) {
    const Value& v = g.values[i];
    if (v.dims.size() > (size_t)kMaxDims)
      fail(value_label(v, i) + " has " + std::to_string(v.dims.size()) + " dimensions (at most " +
           std::to_string(kMaxDims) + ")");
    for (const Dim& d : v.dims)
      if (d.symbolic() ? d.extent != -1 : d.extent < 0)
        fail(value_label(v, i) + " has a bad extent " + std::to_string(d.extent));
    const bool holds_data = v.kind == ValueKind::kParameter || v.kind == ValueKind::kConstant;
    if (holds_data) {
      if (v.has_symbolic_dims()) fail(value_label(v, i) + " holds data but has a symbolic dimension");
      if (!v.data.defined()) fail(value_label(v, i) + " is a " + value_kind_name(v.kind) + " without data");
      const Shape s = v.fixed_shape();  // numel() throws kShape on overflow
      if (v.data.dtype() != v.dtype || v.data.numel() != s.numel())
        fail(value_label(v, i) + ": its data do not match its dtype and shape");
    } else if (v.data.defined()) {
      fail(value_label(v, i) + " is a " + value_kind_name(v.kind) + " but carries data");
    }
    defined[i] = v.kind != ValueKind::kNode;
  }
  for (uint32_t id : g.inputs) {
    if (id >= nv || g.values[id].kind != ValueKind::kInput) fail("graph input " + std::to_string(id) + " is not an input value");
  }
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    const std::string label = "node " + std::to_string(n) + " (" + (node.def ? node.def->name : "?") + ")";
    if (!node.def) fail(label + " has no op");
    const OpDef& def = *node.def;
    if (def.num_inputs >= 0 ? node.inputs.size() != (size_t)def.num_inputs : node.inputs.empty())
      fail(label + " has " + std::to_string(node.inputs.size()) + " inputs; the op takes " +
           (def.num_inputs >= 0 ? std::to_string(def.num_inputs) : std::string("at least 1")));
    if (node.attrs.size() != (int)def.attrs.size())
      fail(label + " has " + std::to_string(node.attrs.size()) + " attributes; the op's schema has " +
           std::to_string(def.attrs.size()));
    for (int a = 0; a < node.attrs.size(); ++a)
      if ((int)node.attrs[a].index() != (int)def.attrs[a].kind)
        fail(label + " attribute '" + def.attrs[a].name + "' is not a " + attr_kind_name(def.attrs[a].kind));
    for (uint32_t id : node.inputs) {
      if (id >= nv) fail(label + " reads value " + std::to_string(id) + ", which does not exist");
      if (!defined[id]) fail(label + " reads " + value_label(g.values[id], id) + " before a node makes it");
    }
    // A control-flow node may carry more results than an op's fixed array (NOTE [Control-flow results]).
    const size_t max_outputs = def.num_subgraphs ? (size_t)kMaxControlResults : (size_t)Inference::kMaxOutputs;
    if (node.outputs.empty() || node.outputs.size() > max_outputs)
      fail(label + " has " + std::to_string(node.outputs.size()) + " outputs");
    for (uint32_t id : node.outputs) {
      if (id >= nv || g.values[id].kind != ValueKind::kNode)
        fail(label + " writes value " + std::to_string(id) + ", which is not a node value");
      if (produced[id]) fail(label + " writes " + value_label(g.values[id], id) + ", which another node writes");
      produced[id] = defined[id] = 1;
    }
    // NOTE [Control flow]: the op says how many subgraphs its nodes carry (while_loop: 2).
    if (node.subgraphs.size() != (size_t)def.num_subgraphs)
      fail(label + " carries " + std::to_string(node.subgraphs.size()) + " subgraphs; the op takes " +
           std::to_string(def.num_subgraphs));
    for (size_t s = 0; s < node.subgraphs.size(); ++s)
      check_graph(node.subgraphs[s], where + ", " + label + " subgraph " + std::to_string(s), depth + 1);
  }
  for (uint32_t id : g.outputs)
    if (id >= nv || !defined[id]) fail("graph output " + std::to_string(id) + " is not defined");
}

}  // namespace spore::ir
