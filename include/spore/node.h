// One node type for everything that records ops (NOTE [Nodes] in docs/design.md): autograd's
// tape today, the graph tracer, the IR writer and the executor next.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "spore/op_registry.h"

namespace spore {

// A value is a tensor handle; values are identified by their TensorImpl (two handles of one impl
// are one value), which is what the tape keys gradients by and what a tracer or IR writer numbers
// when it names values. Its metadata is the tensor's shape and dtype.
inline TensorMeta value_meta(const Tensor& value) { return {value.shape(), value.dtype()}; }
inline bool same_value(const Tensor& a, const Tensor& b) { return a.impl() == b.impl(); }

// One recorded op: which op, its attributes, and where its values lie in the owning NodeList
// (inputs at [first, first + num_inputs), outputs right after), so recording a node allocates
// nothing per node once the list has grown.
struct Node {
  const OpDef* def = nullptr;
  Attrs attrs;
  uint32_t first = 0;
  uint32_t num_inputs = 0, num_outputs = 0;
  OpId op() const { return def->id; }
};

// Nodes in the order they ran, over one flat list of values.
class NodeList {
 public:
  const Node& record(const OpDef& def, std::span<const Tensor> inputs, const Attrs& attrs,
                     std::span<const Tensor> outputs) {
    nodes_.push_back({&def, attrs, (uint32_t)values_.size(), (uint32_t)inputs.size(), (uint32_t)outputs.size()});
    values_.insert(values_.end(), inputs.begin(), inputs.end());
    values_.insert(values_.end(), outputs.begin(), outputs.end());
    return nodes_.back();
  }
  std::span<const Node> nodes() const { return nodes_; }
  std::span<const Tensor> inputs(const Node& n) const { return {values_.data() + n.first, n.num_inputs}; }
  std::span<const Tensor> outputs(const Node& n) const {
    return {values_.data() + n.first + n.num_inputs, n.num_outputs};
  }
  size_t size() const { return nodes_.size(); }
  bool empty() const { return nodes_.empty(); }
  void clear() {
    nodes_.clear();
    values_.clear();
  }

 private:
  std::vector<Node> nodes_;
  std::vector<Tensor> values_;
};

}  // namespace spore
