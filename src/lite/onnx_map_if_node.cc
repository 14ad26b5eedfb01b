// An ONNX If whose condition is computed at run time (NOTE [Lite control flow]): each branch is
// mapped into a closed graph of its own (the outer values it reads become its inputs, outer
// constants are copied in) and the If becomes one `if_else` node carrying both, which the graph
// library's executor runs by reading the predicate and running the chosen branch only.
#include <set>

#include "lite/onnx_mapper.h"

namespace spore::onnx::detail {

// The names `g` reads that it does not define (its inputs, initializers and node outputs define
// names), nested subgraphs included, in the order first read; added to `out` once each.
void free_names(const GraphProto& g, std::set<std::string> defined, std::vector<std::string>& out, std::set<std::string>& seen) {
  for (const auto& i : g.input()) defined.insert(i.name());
  for (const auto& t : g.initializer()) defined.insert(t.name());
  auto read = [&](const std::string& name) {
    if (!name.empty() && !defined.count(name) && seen.insert(name).second) out.push_back(name);
  };
  for (const NodeProto& n : g.node()) {
    for (const std::string& name : n.input()) read(name);
    for (const AttributeProto& a : n.attribute()) {
      if (a.type() == AttributeProto::GRAPH) free_names(a.g(), defined, out, seen);
      for (const GraphProto& sub : a.graphs()) free_names(sub, defined, out, seen);
    }
    for (const std::string& name : n.output()) defined.insert(name);
  }
  for (const auto& o : g.output()) read(o.name());
}

// A subgraph (an If branch, a Loop body), mapped as a closed graph: its `leading` inputs first
// (a Loop body's iteration number, condition and loop-carried values), then the outer values
// (`outer`, values of m) it sees under `names`; those that are constants (or small values known
// now) are copied in, the others become the graph's inputs, in order. The graph returns the
// subgraph's outputs in order, except the names in `skip` (a Loop body's values it passes through),
// as `finish` (when given) rewrites them in the subgraph's mapper.
ir::Graph map_closed(NodeCtx& c, const GraphProto& branch, const std::string& which, const std::vector<ClosedInput>& leading,
                     const std::vector<std::string>& names, const std::vector<uint32_t>& outer, const std::vector<bool>& passed,
                     const std::set<std::string>& skip, const ClosedFinish& finish) {
  Mapper& m = c.m;
  // A closed graph is mapped on its own: the types Spore carries would lose their type there.
  for (size_t k = 0; k < outer.size(); ++k)
    if (const Carried* ct = carried_of(m, outer[k])) c.unsupported(which + " reading '" + names[k] + "', of the carried type " + ct->name + " (NOTE [ONNX carried types])");
  Mapper s;
  s.label = m.label;
  s.opset = m.opset;
  s.depth = m.depth + 1;
  s.unrolled = m.unrolled;
  for (const ClosedInput& in : leading) {
    const uint32_t id = s.push({in.name, ir::ValueKind::kInput, in.dtype, Mapper::dims_of(in.shape), Tensor()},
                               Mapper::placeholder(in.shape, in.dtype));
    s.names[in.name] = id;
    s.g.inputs.push_back(id);
    s.unknowable.insert(id);
    if (in.hint.defined()) s.hints[id] = in.hint;
  }
  for (size_t k = 0; k < names.size(); ++k) {
    const uint32_t id = outer[k];
    if (!passed[k]) {
      const ir::Value& v = m.g.values[id];
      Tensor data = v.data;
      if (auto known = m.known.find(id); !m.is_constant(id)) {  // a small value known now
        data = known->second.first;
        m.used.insert(known->second.second.begin(), known->second.second.end());
      }
      s.names[names[k]] = s.constant(data);
      continue;
    }
    // A graph input keeps the value predict gave (the branch may read it, as the outer graph may);
    // a value known only at predict keeps deferring the mapping there when the branch reads it.
    const ir::Value& v = m.g.values[id];
    const Tensor given = v.kind == ir::ValueKind::kInput ? v.data : Tensor();
    const uint32_t in = s.push({names[k], ir::ValueKind::kInput, m.dtype(id), Mapper::dims_of(m.shape(id)), given},
                               Mapper::placeholder(m.shape(id), m.dtype(id)));
    if (m.derivable.count(id)) s.derivable.insert(in);
    else if (v.kind != ir::ValueKind::kInput || m.unknowable.count(id)) s.unknowable.insert(in);
    s.names[names[k]] = in;
    s.g.inputs.push_back(in);
  }
  for (int k = 0; k < branch.initializer_size(); ++k) {
    const TensorProto& t = branch.initializer(k);
    s.names[t.name()] = s.constant(tensor_of(t, c.where + " " + which + " initializer '" + t.name() + "'"));
  }
  map_nodes(s, branch, c.where + " " + which);
  std::vector<uint32_t> results;
  for (const auto& o : branch.output()) {
    if (skip.count(o.name())) continue;
    auto it = s.names.find(o.name());
    if (it == s.names.end()) c.bad(which + " output '" + o.name() + "' is made by no node");
    results.push_back(it->second);
  }
  if (finish) {
    NodeCtx fc{s, c.node, {}, c.where + " " + which};
    results = finish(fc, std::move(results));
  }
  if (!s.checks.empty() && leading.empty())
    c.bad("internal: per-iteration checks outside a Loop body");  // only a Loop body has entry values
  std::set<uint32_t> returned;
  for (uint32_t id : results) {
    // The node's results must be its own tensors: an input or constant returned as it is, or one
    // value returned twice, is copied (the executor hands them on as fresh results).
    if (s.g.values[id].kind != ir::ValueKind::kNode || !returned.insert(id).second) {
      NodeCtx oc{s, c.node, {}, c.where + " " + which + " output"};
      id = s.emit(oc, OpId::k_copy, {id});
      returned.insert(id);
    }
    s.g.outputs.push_back(id);
  }
  m.unrolled = s.unrolled;
  m.used.insert(s.used.begin(), s.used.end());
  for (uint32_t in : s.g.inputs) s.g.values[in].data = Tensor();  // the executor passes the tensors
  return std::move(s.g);
}

std::vector<uint32_t> if_at_run_time(NodeCtx& c, uint32_t cond) {
  Mapper& m = c.m;
  if (m.shape(cond).numel() != 1) c.bad("the condition must hold one element");
  if (m.depth >= kMaxSubgraphDepth) c.unsupported("If branches nested over " + std::to_string(kMaxSubgraphDepth) + " deep");
  const GraphProto* branches[2];
  const char* which[2] = {"then_branch", "else_branch"};
  for (int b = 0; b < 2; ++b) {
    const AttributeProto* a = find_attr(c.node, which[b]);
    if (!a || a->type() != AttributeProto::GRAPH) c.bad(std::string(which[b]) + " is missing or not a graph");
    branches[b] = &a->g();
  }
  // The outer values either branch reads: each branch takes all of them, in one order.
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const GraphProto* g : branches) free_names(*g, {}, names, seen);
  std::vector<uint32_t> outer;
  std::vector<bool> passed;
  std::vector<uint32_t> operands = {m.cast_to(c, cond, DType::kBool)};
  for (const std::string& name : names) {
    auto it = m.names.find(name);
    if (it == m.names.end()) c.bad("a branch reads '" + name + "', which nothing outside it makes");
    outer.push_back(it->second);
    refuse_ragged_operand(c, it->second);
    const bool inline_value = m.is_constant(it->second) || m.known.count(it->second);
    passed.push_back(!inline_value);
    if (!inline_value) operands.push_back(it->second);
  }
  const int64_t unrolled = m.unrolled;
  ir::Graph then_g = map_closed(c, *branches[0], which[0], {}, names, outer, passed, {}, nullptr);
  ir::Graph else_g = map_closed(c, *branches[1], which[1], {}, names, outer, passed, {}, nullptr);
  if (then_g.outputs.size() != else_g.outputs.size() || (int)then_g.outputs.size() != c.node.output_size())
    c.bad("the branches return " + std::to_string(then_g.outputs.size()) + " and " + std::to_string(else_g.outputs.size()) +
          " values; the If has " + std::to_string(c.node.output_size()) + " outputs");
  // One-element results whose branches differ only in rank ([] and [1]: a Paddle export's flag) take
  // the larger rank in both branches: the same value, one planned shape (ONNX Runtime would give
  // the taken branch's shape; broadcasting against it gives the same values either way).
  std::vector<Shape> target;
  bool reshape = false;
  for (size_t o = 0; o < then_g.outputs.size(); ++o) {
    const ir::Value& a = then_g.values[then_g.outputs[o]];
    const ir::Value& b = else_g.values[else_g.outputs[o]];
    auto one = [](const ir::Value& v) {
      for (const ir::Dim& d : v.dims)
        if (d.extent != 1) return false;
      return true;
    };
    const ir::Value& wider = a.dims.size() >= b.dims.size() ? a : b;
    std::vector<int64_t> dims(wider.dims.size(), 1);
    target.push_back(Shape(dims));
    reshape |= a.dtype == b.dtype && one(a) && one(b) && a.dims.size() != b.dims.size();
  }
  if (reshape) {
    auto finish = [&](NodeCtx& bc, std::vector<uint32_t> results) {
      for (size_t o = 0; o < results.size() && o < target.size(); ++o)
        if (bc.m.shape(results[o]).numel() == 1 && bc.m.shape(results[o]) != target[o])
          results[o] = bc.m.reshape(bc, results[o], std::vector<int64_t>(target[o].begin(), target[o].end()));
      return results;
    };
    m.unrolled = unrolled;
    then_g = map_closed(c, *branches[0], which[0], {}, names, outer, passed, {}, finish);
    else_g = map_closed(c, *branches[1], which[1], {}, names, outer, passed, {}, finish);
  }
  std::vector<int64_t> dtypes, shapes;
  for (size_t o = 0; o < then_g.outputs.size(); ++o) {
    const ir::Value& a = then_g.values[then_g.outputs[o]];
    const ir::Value& b = else_g.values[else_g.outputs[o]];
    bool same = a.dtype == b.dtype && a.dims.size() == b.dims.size();
    for (size_t d = 0; same && d < a.dims.size(); ++d) same = a.dims[d].extent == b.dims[d].extent;
    if (!same)
      c.unsupported("an If on a computed condition whose branches return output " + std::to_string(o) +
                    " with different shapes or dtypes (" + dtype_name(a.dtype) + " with " + std::to_string(a.dims.size()) +
                    " dimensions, " + dtype_name(b.dtype) + " with " + std::to_string(b.dims.size()) +
                    "; Lite plans one shape per output)");
    dtypes.push_back((int64_t)a.dtype);
    shapes.push_back((int64_t)a.dims.size());
    for (const ir::Dim& d : a.dims) shapes.push_back(d.extent);
  }
  const OpDef& def = op_def(OpId::k_if_else);
  const Attrs attrs = Attrs::of(std::move(dtypes), std::move(shapes));
  std::vector<uint32_t> outs = m.add_control_node(c.where, def, operands, attrs);
  m.g.nodes.back().subgraphs.push_back(std::move(then_g));
  m.g.nodes.back().subgraphs.push_back(std::move(else_g));
  return outs;
}

}  // namespace spore::onnx::detail
