// Small IR models built by hand for the IR and Lite tests (NOTE [Model IR]).
#pragma once
#include <string>
#include <vector>

#include "spore/ir.h"
#include "spore/ops.h"

namespace spore::test {

inline std::vector<ir::Dim> fixed_dims(std::initializer_list<int64_t> extents) {
  std::vector<ir::Dim> d;
  for (int64_t e : extents) d.push_back({e, {}});
  return d;
}
inline ir::Value ir_input(std::string name, DType t, std::vector<ir::Dim> dims) {
  return {std::move(name), ir::ValueKind::kInput, t, std::move(dims), {}};
}
inline ir::Value ir_param(std::string name, const Tensor& data) {
  std::vector<ir::Dim> dims;
  for (int64_t e : data.shape()) dims.push_back({e, {}});
  return {std::move(name), ir::ValueKind::kParameter, data.dtype(), dims, data};
}
inline ir::Value ir_node_value(DType t, std::vector<ir::Dim> dims) { return {"", ir::ValueKind::kNode, t, std::move(dims), {}}; }

// x[batch, 3] @ w[3, 4] + b[4] -> relu: the smallest network with a parameter, a broadcast and an
// activation; `batch` is symbolic when `symbolic` (which needs IR version 2).
inline ir::Model dense_relu_model(bool symbolic, int64_t batch_extent = 2) {
  ir::Model m;
  m.producer_version = "test";
  std::vector<ir::Dim> batch = {symbolic ? ir::Dim{-1, "batch"} : ir::Dim{batch_extent, {}}};
  auto with = [&](int64_t n) {
    auto d = batch;
    d.push_back({n, {}});
    return d;
  };
  ir::Graph& g = m.graph;
  g.values.push_back(ir_input("x", DType::kFloat32, with(3)));                                  // 0
  g.values.push_back(ir_param("w", reshape(arange(0, 12, 1, DType::kFloat32), {3, 4})));       // 1
  g.values.push_back(ir_param("b", full({4}, 0.5)));                                            // 2
  g.values.push_back(ir_node_value(DType::kFloat32, with(4)));                                   // 3
  g.values.push_back(ir_node_value(DType::kFloat32, with(4)));                                   // 4
  g.values.push_back(ir_node_value(DType::kFloat32, with(4)));                                   // 5
  g.values[5].name = "y";
  g.nodes.push_back({&op_def(OpId::k_matmul), {}, {0, 1}, {3}, {}});
  g.nodes.push_back({&op_def(OpId::k_add), {}, {3, 2}, {4}, {}});
  g.nodes.push_back({&op_def(OpId::k_relu), {}, {4}, {5}, {}});
  g.inputs = {0};
  g.outputs = {5};
  m.metadata = {{"task", "dense"}};
  return m;
}

}  // namespace spore::test
