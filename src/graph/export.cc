// Export (NOTE [Export]): trace with the graph compiler, convert the graph to the IR's model, write.
#include "spore/export.h"

#include <string>

#include "spore/error.h"
#include "spore/ops.h"

namespace spore {
namespace {

using graph::ValueId;
using graph::ValueKind;

[[noreturn]] void fail(ErrorCode code, const std::string& what) { throw Error(code, "export: " + what); }

std::string default_name(const std::vector<std::string>& given, size_t i, size_t n, const char* one, const char* many) {
  if (i < given.size() && !given[i].empty()) return given[i];
  return n == 1 ? one : many + std::to_string(i);
}

std::vector<ir::Dim> fixed_dims(const Shape& s) {
  std::vector<ir::Dim> d;
  for (int64_t e : s) d.push_back({e, {}});
  return d;
}

// One traced graph as the IR's graph, dimensions all fixed.
ir::Graph convert(const graph::Graph& g, const ExportOptions& o, const std::map<const void*, std::string>& names) {
  ir::Graph out;
  std::vector<uint32_t> id(g.num_values(), UINT32_MAX);
  auto push = [&](ValueId v, ir::Value value) {
    id[v] = (uint32_t)out.values.size();
    out.values.push_back(std::move(value));
    return id[v];
  };
  const auto inputs = g.graph_inputs();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const graph::Value& v = g.value(inputs[i]);
    out.inputs.push_back(push(inputs[i], {default_name(o.input_names, i, inputs.size(), "x", "input"), ir::ValueKind::kInput,
                                          v.meta.dtype, fixed_dims(v.meta.shape), {}}));
  }
  auto bind = [&](ValueId v) {
    if (id[v] != UINT32_MAX) return id[v];
    const graph::Value& value = g.value(v);
    if (value.kind == ValueKind::kCaptured || value.kind == ValueKind::kConstant) {
      auto it = names.find(value.tensor.impl());
      std::string name = it != names.end() ? it->second : value.name;
      const ir::ValueKind kind = value.kind == ValueKind::kCaptured ? ir::ValueKind::kParameter : ir::ValueKind::kConstant;
      return push(v, {name, kind, value.meta.dtype, fixed_dims(value.meta.shape), value.tensor.contiguous()});
    }
    fail(ErrorCode::kInternal, "value " + std::to_string(v) + " is read before it is made");
  };
  for (size_t n = 0; n < g.num_nodes(); ++n) {
    const Node& node = g.node((int)n);
    if (node.def->writes_mask != 0)
      fail(ErrorCode::kValue, std::string("node ") + std::to_string(n) + " (" + node.def->name +
                                  ") writes its input in place (an optimizer update or copy_): export an inference "
                                  "function, not a training step");
    if (node.def->facts.collective)
      fail(ErrorCode::kUnsupported, std::string("node ") + std::to_string(n) + " (" + node.def->name +
                                        ") is a collective across processes (NOTE [Collective ops]), which ONNX "
                                        "and Lite, running one process, cannot run: export the network without "
                                        "its DistributedDataParallel wrapper or dist:: calls");
    ir::Node in{node.def, node.attrs, {}, {}, {}};
    // NOTE [Control flow]: a loop's condition and body are closed graphs (their inputs are the
    // node's inputs), written as the IR node's subgraphs (IR version 2).
    for (const auto& sub : g.subgraphs((int)n)) in.subgraphs.push_back(convert(*sub, ExportOptions{}, names));
    for (ValueId v : g.inputs(node)) in.inputs.push_back(bind(v));
    for (ValueId v : g.outputs(node)) {
      const graph::Value& value = g.value(v);
      in.outputs.push_back(push(v, {"", ir::ValueKind::kNode, value.meta.dtype, fixed_dims(value.meta.shape), {}}));
    }
    out.nodes.push_back(std::move(in));
  }
  const auto outputs = g.graph_outputs();
  for (size_t i = 0; i < outputs.size(); ++i) {
    const uint32_t v = bind(outputs[i]);
    ir::Value& value = out.values[v];
    if (value.kind == ir::ValueKind::kNode && value.name.empty())
      value.name = default_name(o.output_names, i, outputs.size(), "y", "output");
    out.outputs.push_back(v);
  }
  return out;
}

// Marks the dimensions the dynamic axes reach: `a` traced with the example extents, `b` with each
// symbol's extent changed; every dimension that differs must differ as one symbol does.
void mark_symbols(ir::Graph& a, const ir::Graph& b, const std::map<std::pair<int64_t, int64_t>, std::string>& symbols) {
  auto mismatch = [](const std::string& what) {
    fail(ErrorCode::kValue, what + ": the graph changes with the dynamic axes' extents, so it cannot be written with "
                                   "symbolic dimensions; export with fixed shapes, or write the model so that no op "
                                   "bakes an extent in (reshape with -1 instead of a computed size)");
  };
  if (a.nodes.size() != b.nodes.size() || a.values.size() != b.values.size()) mismatch("the two traces differ in size");
  for (size_t n = 0; n < a.nodes.size(); ++n) {
    const ir::Node &x = a.nodes[n], &y = b.nodes[n];
    if (!x.subgraphs.empty())
      fail(ErrorCode::kUnsupported, std::string("node ") + std::to_string(n) + " (" + x.def->name +
                                        ") has subgraphs, which are exported with fixed shapes only; export "
                                        "without dynamic axes");
    bool same = x.def == y.def && x.inputs == y.inputs && x.outputs == y.outputs && x.attrs.size() == y.attrs.size();
    for (int i = 0; same && i < x.attrs.size(); ++i) same = x.attrs[i] == y.attrs[i];
    if (!same) mismatch(std::string("node ") + std::to_string(n) + " (" + x.def->name + ")");
  }
  for (size_t v = 0; v < a.values.size(); ++v) {
    ir::Value &x = a.values[v];
    const ir::Value& y = b.values[v];
    if (x.dims.size() != y.dims.size()) mismatch("value " + std::to_string(v));
    for (size_t d = 0; d < x.dims.size(); ++d) {
      if (x.dims[d].extent == y.dims[d].extent) continue;
      auto it = symbols.find({x.dims[d].extent, y.dims[d].extent});
      if (it == symbols.end()) mismatch("dimension " + std::to_string(d) + " of value " + std::to_string(v) + " (" + x.name + ")");
      if (x.data.defined())
        fail(ErrorCode::kValue, "value " + std::to_string(v) + " ('" + x.name + "') holds data whose shape depends on '" +
                                    it->second + "'; export with fixed shapes, or with optimize = false");
      x.dims[d] = {-1, it->second};
    }
  }
}

graph::Graph trace_once(const TensorsFn& fn, const std::vector<Tensor>& inputs, const ExportOptions& o) {
  JitOptions jo;
  jo.name = "export";
  jo.optimize = o.optimize;
  jo.plan_memory = false;
  JitFunction f = jit(fn, jo);
  f(inputs);
  return *f.last_graph();
}

}  // namespace

ir::Model trace_to_ir(const TensorsFn& fn, const std::vector<Tensor>& example_inputs, const ExportOptions& o,
                      const std::map<const void*, std::string>& names) {
  ir::Model m;
  m.producer_name = "spore";
  m.producer_version = SPORE_VERSION;
  m.metadata = o.metadata;
  m.graph = convert(trace_once(fn, example_inputs, o), o, names);
  if (o.dynamic_axes.empty()) return m;
  // The second trace: each symbol's extent changed to one no other symbol has (with a different
  // step per symbol, so that the pair (example extent, new extent) names one symbol).
  std::map<std::string, std::pair<int64_t, int64_t>> extent;  // symbol -> (example, changed)
  std::map<std::pair<int64_t, int64_t>, std::string> by_pair;
  std::vector<Tensor> changed = example_inputs;
  int step = 0;
  for (const auto& [input, axes] : o.dynamic_axes) {
    if (input < 0 || input >= (int)example_inputs.size())
      fail(ErrorCode::kValue, "dynamic_axes names input " + std::to_string(input) + " of " + std::to_string(example_inputs.size()));
    std::vector<int64_t> shape(changed[input].shape().begin(), changed[input].shape().end());
    for (const auto& [dim, symbol] : axes) {
      if (dim < 0 || dim >= (int)shape.size() || symbol.empty())
        fail(ErrorCode::kValue, "dynamic_axes: input " + std::to_string(input) + " has no dimension " + std::to_string(dim) +
                                    " (or the symbol is empty)");
      const int64_t was = example_inputs[input].shape()[dim];
      auto [it, fresh] = extent.emplace(symbol, std::make_pair(was, was + 2 + 3 * step));
      if (fresh) {
        ++step;
        by_pair[it->second] = symbol;
      } else if (it->second.first != was) {
        fail(ErrorCode::kValue, "dynamic_axes: symbol '" + symbol + "' has the extents " + std::to_string(it->second.first) +
                                    " and " + std::to_string(was) + " in the example inputs");
      }
      shape[dim] = it->second.second;
    }
    changed[input] = zeros(shape, example_inputs[input].dtype());
  }
  ir::Graph other = convert(trace_once(fn, changed, o), o, names);
  mark_symbols(m.graph, other, by_pair);
  return m;
}

void export_model(const TensorsFn& fn, const std::vector<Tensor>& example_inputs, const std::filesystem::path& path,
                  const ExportOptions& options) {
  ir::write_model(path, trace_to_ir(fn, example_inputs, options), {options.ir_version});
}

}  // namespace spore
