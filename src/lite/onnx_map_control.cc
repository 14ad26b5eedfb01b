// ONNX If onto the mapping itself (NOTE [ONNX dynamic shapes]): Lite has no control flow, so an If
// whose condition is known when the graph is mapped (an initializer or Constant, or a small value
// computed from predict's inputs, which then re-maps when those values change) is replaced by the
// nodes of the branch it takes. A condition computed from large values is refused by name.
#include "lite/onnx_mapper.h"

namespace spore::onnx::detail {
namespace {

std::vector<uint32_t> if_op(NodeCtx& c) {
  Mapper& m = c.m;
  if (m.probing)  // the condition may be computed from an extent that the stand-ins do not have
    throw InputValueNeeded("", c.where + ": an If under symbolic input extents is mapped at predict, from the real shapes");
  const Tensor& cond = m.data(c, c.at(0), "condition (Lite runs an If whose condition is known when the graph is mapped)");
  if (cond.numel() != 1) c.bad("the condition must hold one element");
  const bool then = cond.contiguous().to(DType::kFloat64).to_vector<double>()[0] != 0;
  const char* branch = then ? "then_branch" : "else_branch";
  const AttributeProto* a = find_attr(c.node, branch);
  if (!a || a->type() != AttributeProto::GRAPH) c.bad(std::string(branch) + " is missing or not a graph");
  if (m.depth >= kMaxSubgraphDepth) c.unsupported("If branches nested over " + std::to_string(kMaxSubgraphDepth) + " deep");
  const GraphProto& g = a->g();
  // The branch sees the outer names; its own are dropped after it (they are local to it).
  const std::map<std::string, uint32_t> outer = m.names;
  ++m.depth;
  for (int k = 0; k < g.initializer_size(); ++k) {
    const TensorProto& t = g.initializer(k);
    if (m.names.count(t.name())) c.bad(std::string(branch) + " initializer '" + t.name() + "' is already defined");
    m.names[t.name()] = m.constant(tensor_of(t, c.where + " " + branch + " initializer '" + t.name() + "'"));
  }
  map_nodes(m, g, c.where + " " + branch);
  std::vector<uint32_t> outs;
  for (const auto& o : g.output()) {
    auto it = m.names.find(o.name());
    if (it == m.names.end()) c.bad(std::string(branch) + " output '" + o.name() + "' is made by no node");
    outs.push_back(it->second);
  }
  --m.depth;
  m.names = outer;
  if ((int)outs.size() != c.node.output_size())
    c.bad(std::string(branch) + " has " + std::to_string(outs.size()) + " outputs; the If has " + std::to_string(c.node.output_size()));
  return outs;
}

}  // namespace

void add_control_ops(HandlerTable& t) { t["If"] = if_op; }

}  // namespace spore::onnx::detail
