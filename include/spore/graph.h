// A traced graph: registry nodes over numbered values (NOTE [Graphs] in docs/design.md).
//
// A Graph holds the same `Node` type the tape records (include/spore/node.h): an op, its
// attributes, and a range of operands. Where the tape's operands are tensors, a graph's are value
// ids, so one graph runs many times on different tensors. The tracer builds a graph from the
// nodes eager dispatch ran, the passes (src/graph/passes/) rewrite it, the executor plans every
// node once (PlannedOp) and runs it, and the IR writer serialises it.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "spore/node.h"
#include "spore/op_registry.h"

namespace spore::graph {

using ValueId = uint32_t;
inline constexpr ValueId kNoValue = ~ValueId{0};

enum class ValueKind : uint8_t {
  kInput,     // an argument of the function, bound at each call
  kCaptured,  // a tensor the function read but did not make (a parameter, a closure's tensor):
              // bound by reference, so in-place updates between calls are seen without re-tracing
  kConstant,  // a tensor the graph owns (made inside the trace with no inputs, or folded)
  kNode,      // an output of a node
};
const char* value_kind_name(ValueKind k);

struct Value {
  TensorMeta meta;
  ValueKind kind = ValueKind::kNode;
  int32_t node = -1;    // kNode: index of the producing node in nodes()
  uint32_t output = 0;  // kNode: which of its outputs
  Tensor tensor;        // kCaptured: the bound tensor; kConstant: the value
  std::string name;     // optional: inputs, captured tensors, constants (dumps, the IR)
};

// What one graph pass did (src/graph/passes/): JitStats::last_passes holds one per pass of the
// last compile, and verbose compiles print them.
struct PassStats {
  std::string pass;
  int nodes_before = 0, nodes_after = 0;
  int nodes_removed = 0;
  int ops_fused = 0;        // nodes folded into fused nodes
  int64_t bytes_saved = 0;  // intermediate bytes no longer written to memory
  int constants_changed = 0;  // constants replaced by rewritten copies (subnormals flushed)
};

class Graph {
 public:
  // ---- building ----
  ValueId add_input(const TensorMeta& meta, std::string name = {});
  ValueId add_captured(const Tensor& tensor, std::string name = {});
  ValueId add_constant(const Tensor& tensor, std::string name = {});
  // Appends a node reading `inputs` (ids already in the graph) and producing one new value per
  // entry of `outputs`; returns the node's index. Output ids are returned by outputs(node).
  int add_node(const OpDef& def, const Attrs& attrs, std::span<const ValueId> inputs,
               std::span<const TensorMeta> outputs);
  void set_outputs(std::vector<ValueId> outputs) { outputs_ = std::move(outputs); }
  // Subgraphs of a node (cond's branches, while_loop's condition and body).
  void set_subgraphs(int node, std::vector<std::shared_ptr<const Graph>> subgraphs);

  // ---- reading ----
  std::span<const Node> nodes() const { return nodes_; }
  const Node& node(int i) const { return nodes_[i]; }
  size_t num_nodes() const { return nodes_.size(); }
  std::span<const ValueId> inputs(const Node& n) const { return {operands_.data() + n.first, n.num_inputs}; }
  std::span<const ValueId> outputs(const Node& n) const {
    return {operands_.data() + n.first + n.num_inputs, n.num_outputs};
  }
  std::span<const ValueId> inputs(int node) const { return inputs(nodes_[node]); }
  std::span<const ValueId> outputs(int node) const { return outputs(nodes_[node]); }
  const Value& value(ValueId id) const { return values_[id]; }
  size_t num_values() const { return values_.size(); }
  // The function's arguments in order (kInput values), the captured tensors in order of first
  // use, and the function's results.
  std::span<const ValueId> graph_inputs() const { return graph_inputs_; }
  std::span<const ValueId> captured() const { return captured_; }
  std::span<const ValueId> graph_outputs() const { return outputs_; }
  std::span<const std::shared_ptr<const Graph>> subgraphs(int node) const;

  // ---- rewriting (the passes) ----
  // Every use of `from` (node operands and graph outputs) reads `to` instead.
  void replace_uses(ValueId from, ValueId to);
  // Replaces input `slot` of node `node`.
  void set_input(int node, int slot, ValueId to);
  // Like add_node, but the new node goes before node `position` (nodes from there on move up by
  // one), so a pass can put a replacement where the node it replaces ran (fusion, composed
  // permutes). `position` == num_nodes() appends.
  int insert_node(int position, const OpDef& def, const Attrs& attrs, std::span<const ValueId> inputs,
                  std::span<const TensorMeta> outputs);
  // Every captured value becomes a constant holding the tensor it was bound to (JitOptions::freeze:
  // the caller promises the tensors no longer change, so passes may fold them). Values some node
  // writes in place stay captured: they are state.
  void freeze_captured();
  // Constants no node and no graph output reads any more (a weight a pass folded into another)
  // drop their tensors, so a graph kept for many runs does not hold their bytes.
  void release_unread_constants();
  // Drops the nodes with remove[i] set, keeping the others in order; their output values stay in
  // the value table (dangling) but nothing may read them afterwards. Node indices change.
  void remove_nodes(const std::vector<bool>& remove);
  // Number of readers of each value (node operands plus graph outputs), indexed by ValueId.
  std::vector<int> use_counts() const;
  // Checks the invariants (operands defined before use, ids in range, producers consistent);
  // throws kValue naming the first broken one. Tests and the executor call it after each pass.
  void validate() const;

 private:
  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::vector<ValueId> operands_;
  std::vector<ValueId> graph_inputs_, captured_, outputs_;
  std::vector<std::vector<std::shared_ptr<const Graph>>> subgraphs_;  // by node; often empty
};

}  // namespace spore::graph
