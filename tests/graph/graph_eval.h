// Test helpers for the graph passes: a tiny reference interpreter that runs a Graph node by node
// with ordinary dispatch (independent of the executor being written in parallel), and a builder
// that infers each node's output metadata by dispatching it on example tensors.
#pragma once
#include <gtest/gtest.h>

#include <cstring>
#include <initializer_list>
#include <span>
#include <vector>

#include "graph/passes/passes.h"
#include "spore/error.h"
#include "spore/graph.h"
#include "spore/ops.h"

namespace spore::graph::test {

// Runs `g` on `inputs` (bound to graph_inputs() in order); returns the graph outputs. In-place
// nodes write the bound captured tensors, exactly as the executor will.
inline std::vector<Tensor> evaluate(const Graph& g, std::span<const Tensor> inputs) {
  std::vector<Tensor> env(g.num_values());
  for (size_t v = 0; v < g.num_values(); ++v)
    if (g.value((ValueId)v).kind == ValueKind::kCaptured ||
        g.value((ValueId)v).kind == ValueKind::kConstant)
      env[v] = g.value((ValueId)v).tensor;
  std::span<const ValueId> in = g.graph_inputs();
  if (in.size() != inputs.size())
    throw Error(ErrorCode::kValue, "evaluate: wrong number of inputs");
  for (size_t i = 0; i < in.size(); ++i) env[in[i]] = inputs[i];
  std::vector<Tensor> args;
  for (int i = 0; i < (int)g.num_nodes(); ++i) {
    if (!g.subgraphs(i).empty()) throw Error(ErrorCode::kUnsupported, "evaluate: subgraphs");
    args.clear();
    for (ValueId v : g.inputs(i)) args.push_back(env[v]);
    TensorList r = dispatch(g.node(i).op(), args, g.node(i).attrs);
    std::span<const ValueId> outs = g.outputs(i);
    for (size_t o = 0; o < outs.size(); ++o) env[outs[o]] = r[(int)o];
  }
  std::vector<Tensor> out;
  for (ValueId v : g.graph_outputs()) out.push_back(env[v]);
  return out;
}

inline std::vector<uint8_t> bytes(const Tensor& t) {
  return t.contiguous().to_bytes();
}

// Same dtype, shape and bytes.
inline void expect_bitwise(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("output " + std::to_string(i));
    ASSERT_EQ(got[i].dtype(), want[i].dtype());
    ASSERT_EQ(got[i].shape(), want[i].shape());
    EXPECT_TRUE(bytes(got[i]) == bytes(want[i])) << "values differ";
  }
}

// Builds a graph and, alongside it, example tensors for every value: a node's output metadata
// is what dispatch makes of the examples (inputs of in-place ops are cloned first, so building
// never writes a captured tensor).
class Builder {
 public:
  ValueId input(const Tensor& example, std::string name = {}) {
    ValueId v = g.add_input(value_meta(example), std::move(name));
    remember(v, example);
    inputs.push_back(example);
    return v;
  }
  ValueId captured(const Tensor& t, std::string name = {}) {
    ValueId v = g.add_captured(t, std::move(name));
    remember(v, t);
    return v;
  }
  ValueId constant(const Tensor& t, std::string name = {}) {
    ValueId v = g.add_constant(t, std::move(name));
    remember(v, t);
    return v;
  }
  std::vector<ValueId> node_n(OpId op, std::initializer_list<ValueId> in, const Attrs& attrs = {}) {
    std::vector<Tensor> args;
    for (ValueId v : in) args.push_back(op_def(op).writes_mask ? examples[v].clone() : examples[v]);
    TensorList r = dispatch(op, args, attrs);
    std::vector<TensorMeta> metas;
    for (int o = 0; o < r.size(); ++o) metas.push_back(value_meta(r[o]));
    std::vector<ValueId> ids(in);
    int n = g.add_node(op_def(op), attrs, ids, metas);
    std::vector<ValueId> outs(g.outputs(n).begin(), g.outputs(n).end());
    for (int o = 0; o < r.size(); ++o) remember(outs[o], r[o]);
    return outs;
  }
  ValueId node(OpId op, std::initializer_list<ValueId> in, const Attrs& attrs = {}) {
    return node_n(op, in, attrs)[0];
  }
  void outputs(std::vector<ValueId> outs) { g.set_outputs(std::move(outs)); }

  std::vector<Tensor> run() const { return evaluate(g, inputs); }
  std::vector<Tensor> run(const Graph& other) const { return evaluate(other, inputs); }

  // Ops of the graph's nodes, in order.
  std::vector<OpId> ops() const {
    std::vector<OpId> r;
    for (const Node& n : g.nodes()) r.push_back(n.op());
    return r;
  }
  int count(OpId op) const {
    int c = 0;
    for (const Node& n : g.nodes()) c += n.op() == op;
    return c;
  }

  Graph g;
  std::vector<Tensor> inputs;

 private:
  void remember(ValueId v, const Tensor& t) {
    if (examples.size() <= v) examples.resize(v + 1);
    examples[v] = t;
  }
  std::vector<Tensor> examples;
};

inline Attrs fill_attrs(std::vector<int64_t> shape, double value, DType dtype = DType::kFloat32) {
  return Attrs::of(std::move(shape), value, dtype);
}

}  // namespace spore::graph::test
