// The graph's value table and node list (NOTE [Graphs]).
#include "spore/graph.h"

#include <algorithm>
#include <string>

#include "spore/error.h"

namespace spore::graph {

const char* value_kind_name(ValueKind k) {
  switch (k) {
    case ValueKind::kInput: return "input";
    case ValueKind::kCaptured: return "captured";
    case ValueKind::kConstant: return "constant";
    case ValueKind::kNode: return "node";
  }
  return "?";
}

ValueId Graph::add_input(const TensorMeta& meta, std::string name) {
  values_.push_back({meta, ValueKind::kInput, -1, 0, Tensor(), std::move(name)});
  graph_inputs_.push_back((ValueId)values_.size() - 1);
  return graph_inputs_.back();
}

ValueId Graph::add_captured(const Tensor& tensor, std::string name) {
  values_.push_back({value_meta(tensor), ValueKind::kCaptured, -1, 0, tensor, std::move(name)});
  captured_.push_back((ValueId)values_.size() - 1);
  return captured_.back();
}

ValueId Graph::add_constant(const Tensor& tensor, std::string name) {
  values_.push_back({value_meta(tensor), ValueKind::kConstant, -1, 0, tensor, std::move(name)});
  return (ValueId)values_.size() - 1;
}

int Graph::add_node(const OpDef& def, const Attrs& attrs, std::span<const ValueId> inputs,
                    std::span<const TensorMeta> outputs) {
  for (ValueId v : inputs)
    if (v >= values_.size())
      throw Error(ErrorCode::kValue, std::string("graph: node '") + def.name + "' reads value " +
                                         std::to_string(v) + ", which the graph does not have");
  const int index = (int)nodes_.size();
  nodes_.push_back({&def, attrs, (uint32_t)operands_.size(), (uint32_t)inputs.size(), (uint32_t)outputs.size()});
  operands_.insert(operands_.end(), inputs.begin(), inputs.end());
  for (size_t o = 0; o < outputs.size(); ++o) {
    values_.push_back({outputs[o], ValueKind::kNode, index, (uint32_t)o, Tensor(), {}});
    operands_.push_back((ValueId)values_.size() - 1);
  }
  return index;
}

void Graph::set_subgraphs(int node, std::vector<std::shared_ptr<const Graph>> subgraphs) {
  if (subgraphs_.size() <= (size_t)node) subgraphs_.resize(node + 1);
  subgraphs_[node] = std::move(subgraphs);
}

std::span<const std::shared_ptr<const Graph>> Graph::subgraphs(int node) const {
  if ((size_t)node >= subgraphs_.size()) return {};
  return subgraphs_[node];
}

void Graph::replace_uses(ValueId from, ValueId to) {
  for (const Node& n : nodes_)
    for (uint32_t i = 0; i < n.num_inputs; ++i)
      if (operands_[n.first + i] == from) operands_[n.first + i] = to;
  for (ValueId& v : outputs_)
    if (v == from) v = to;
}

void Graph::set_input(int node, int slot, ValueId to) { operands_[nodes_[node].first + slot] = to; }

int Graph::insert_node(int position, const OpDef& def, const Attrs& attrs, std::span<const ValueId> inputs,
                       std::span<const TensorMeta> outputs) {
  if (position < 0 || (size_t)position > nodes_.size())
    throw Error(ErrorCode::kValue, "graph: insert_node at " + std::to_string(position) + ", but the graph has " +
                                       std::to_string(nodes_.size()) + " nodes");
  const int last = add_node(def, attrs, inputs, outputs);
  if (position == last) return last;
  // Rotate the new node into place; operands stay where they are (nodes point into them).
  std::rotate(nodes_.begin() + position, nodes_.begin() + last, nodes_.end());
  if (subgraphs_.size() > (size_t)position) {
    subgraphs_.resize(nodes_.size());
    std::rotate(subgraphs_.begin() + position, subgraphs_.begin() + last, subgraphs_.end());
  }
  for (size_t i = position; i < nodes_.size(); ++i)
    for (ValueId v : this->outputs(nodes_[i])) values_[v].node = (int32_t)i;
  return position;
}

void Graph::freeze_captured() {
  std::vector<bool> written(values_.size(), false);
  for (const Node& n : nodes_)
    for (uint32_t k = 0; k < n.num_inputs; ++k)
      if (n.def->writes((int)k)) written[operands_[n.first + k]] = true;
  std::vector<ValueId> still;
  for (ValueId v : captured_) {
    if (written[v]) still.push_back(v);
    else values_[v].kind = ValueKind::kConstant;
  }
  captured_ = std::move(still);
}

void Graph::release_unread_constants() {
  const std::vector<int> uses = use_counts();
  for (size_t v = 0; v < values_.size(); ++v)
    if (values_[v].kind == ValueKind::kConstant && uses[v] == 0) values_[v].tensor = Tensor();
}

void Graph::remove_nodes(const std::vector<bool>& remove) {
  std::vector<Node> kept;
  std::vector<ValueId> operands;
  std::vector<std::vector<std::shared_ptr<const Graph>>> subgraphs;
  kept.reserve(nodes_.size());
  operands.reserve(operands_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (i < remove.size() && remove[i]) continue;
    Node n = nodes_[i];
    const uint32_t count = n.num_inputs + n.num_outputs;
    operands.insert(operands.end(), operands_.begin() + n.first, operands_.begin() + n.first + count);
    n.first = (uint32_t)(operands.size() - count);
    const int index = (int)kept.size();
    for (uint32_t o = 0; o < n.num_outputs; ++o) values_[operands[n.first + n.num_inputs + o]].node = index;
    if (i < subgraphs_.size() && !subgraphs_[i].empty()) {
      subgraphs.resize(index + 1);
      subgraphs[index] = std::move(subgraphs_[i]);
    }
    kept.push_back(n);
  }
  nodes_ = std::move(kept);
  operands_ = std::move(operands);
  subgraphs_ = std::move(subgraphs);
}

std::vector<int> Graph::use_counts() const {
  std::vector<int> uses(values_.size(), 0);
  for (const Node& n : nodes_)
    for (ValueId v : inputs(n)) ++uses[v];
  for (ValueId v : outputs_) ++uses[v];
  return uses;
}

void Graph::validate() const {
  auto fail = [](const std::string& what) { throw Error(ErrorCode::kValue, "graph: " + what); };
  std::vector<bool> defined(values_.size(), false);
  for (size_t v = 0; v < values_.size(); ++v) defined[v] = values_[v].kind != ValueKind::kNode;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    for (ValueId v : inputs(n)) {
      if (v >= values_.size()) fail("node " + std::to_string(i) + " reads value " + std::to_string(v) + ", out of range");
      if (!defined[v])
        fail("node " + std::to_string(i) + " (" + n.def->name + ") reads value " + std::to_string(v) +
             " before any node makes it");
    }
    for (uint32_t o = 0; o < n.num_outputs; ++o) {
      ValueId v = outputs(n)[o];
      if (v >= values_.size() || values_[v].node != (int32_t)i || values_[v].output != o)
        fail("node " + std::to_string(i) + " (" + n.def->name + ") output " + std::to_string(o) +
             " does not name it as its producer");
      defined[v] = true;
    }
  }
  for (ValueId v : outputs_)
    if (v >= values_.size() || !defined[v]) fail("graph output " + std::to_string(v) + " is not defined");
}

}  // namespace spore::graph
