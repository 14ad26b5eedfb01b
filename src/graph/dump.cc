// Graph dumps: text and Graphviz DOT (NOTE [Graphs]).
#include <sstream>

#include "spore/format.h"
#include "spore/jit.h"

namespace spore::graph {

namespace {

std::string attr_text(const AttrValue& a) {
  std::ostringstream s;
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          s << "[";
          for (size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << v[i];
          s << "]";
        } else if constexpr (std::is_same_v<T, DType>) {
          s << dtype_name(v);
        } else if constexpr (std::is_same_v<T, bool>) {
          s << (v ? "true" : "false");
        } else if constexpr (std::is_same_v<T, std::string>) {
          s << '"' << v << '"';
        } else {
          s << v;
        }
      },
      a);
  return s.str();
}

std::string attrs_text(const Node& n) {
  std::string out;
  for (int i = 0; i < n.attrs.size(); ++i) {
    out += i ? ", " : "";
    out += (i < (int)n.def->attrs.size() ? std::string(n.def->attrs[i].name) + "=" : std::string()) +
           attr_text(n.attrs[i]);
  }
  return out;
}

std::string meta_text(const TensorMeta& m) { return std::string(dtype_name(m.dtype)) + m.shape.str(); }

}  // namespace

std::string dump(const Graph& g) {
  std::ostringstream s;
  s << "graph: " << g.graph_inputs().size() << " inputs, " << g.captured().size() << " captured, "
    << g.num_nodes() << " nodes, " << g.graph_outputs().size() << " outputs\n";
  for (size_t v = 0; v < g.num_values(); ++v) {
    const Value& val = g.value((ValueId)v);
    if (val.kind == ValueKind::kNode) continue;
    s << "%" << v << " = " << value_kind_name(val.kind) << " " << meta_text(val.meta);
    if (!val.name.empty()) s << " \"" << val.name << "\"";
    s << "\n";
  }
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    const Node& n = g.node((int)i);
    s << "#" << i << " " << n.def->name << "(";
    bool first = true;
    for (ValueId v : g.inputs(n)) {
      s << (first ? "" : ", ") << "%" << v;
      first = false;
    }
    s << ")";
    if (n.attrs.size()) s << " {" << attrs_text(n) << "}";
    s << " ->";
    if (!n.num_outputs) s << " (writes in place)";
    for (ValueId v : g.outputs(n)) s << " %" << v << ":" << meta_text(g.value(v).meta);
    if (!g.subgraphs((int)i).empty()) s << " [" << g.subgraphs((int)i).size() << " subgraphs]";
    s << "\n";
    // A loop's condition and body, indented under their node (NOTE [Control flow]).
    for (const auto& sub : g.subgraphs((int)i)) {
      std::istringstream lines(dump(*sub));
      for (std::string line; std::getline(lines, line);) s << "    | " << line << "\n";
    }
  }
  s << "outputs:";
  for (ValueId v : g.graph_outputs()) s << " %" << v;
  s << "\n";
  return s.str();
}

std::string dump_dot(const Graph& g) {
  std::ostringstream s;
  s << "digraph spore_graph {\n  rankdir=TB;\n  node [fontname=\"monospace\", fontsize=10];\n";
  for (size_t v = 0; v < g.num_values(); ++v) {
    const Value& val = g.value((ValueId)v);
    if (val.kind == ValueKind::kNode) continue;
    s << "  v" << v << " [shape=ellipse, label=\"%" << v << " " << value_kind_name(val.kind) << "\\n"
      << meta_text(val.meta) << "\"];\n";
  }
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    const Node& n = g.node((int)i);
    s << "  n" << i << " [shape=box, label=\"#" << i << " " << n.def->name;
    if (n.attrs.size()) {
      std::string a = attrs_text(n);
      for (char& c : a)
        if (c == '"') c = '\'';
      s << "\\n" << a;
    }
    s << "\"];\n";
    for (ValueId v : g.inputs(n)) {
      const Value& val = g.value(v);
      if (val.kind == ValueKind::kNode)
        s << "  n" << val.node << " -> n" << i << " [label=\"%" << v << " " << meta_text(val.meta) << "\"];\n";
      else
        s << "  v" << v << " -> n" << i << ";\n";
    }
  }
  s << "  out [shape=doublecircle, label=\"outputs\"];\n";
  for (ValueId v : g.graph_outputs()) {
    const Value& val = g.value(v);
    // Streamed piece by piece: GCC 12 warns (-Wrestrict, a false positive) on "n" + to_string here.
    if (val.kind == ValueKind::kNode)
      s << "  n" << val.node;
    else
      s << "  v" << v;
    s << " -> out [label=\"%" << v << "\"];\n";
  }
  s << "}\n";
  return s.str();
}

}  // namespace spore::graph
