// Lite's executor (NOTE [Lite runtime]): an IR graph planned node by node with the registry's
// PlannedOp, run in order, each intermediate freed after its last reader.
#pragma once
#include <memory>
#include <vector>

#include "spore/dispatch_plan.h"
#include "spore/ir.h"

namespace spore::lite {

class Executor {
 public:
  // Binds the graph's weights on `device` (a copy only when the device is not the CPU).
  Executor(ir::Graph graph, Device device, std::string label);
  // Plans every node for inputs of these shapes (one per graph input), checking each planned
  // output against the shape and dtype the file declares; kFormat naming the node on a mismatch.
  void plan(const std::vector<Shape>& input_shapes);
  bool planned_for(const std::vector<Shape>& input_shapes) const { return planned_ && input_shapes == planned_shapes_; }
  // Inputs already checked against the signature and on the device.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
  const ir::Graph& graph() const { return graph_; }
  Device device() const { return device_; }

 private:
  struct Step {
    std::unique_ptr<PlannedOp> op;
    std::vector<uint32_t> inputs, outputs;
    std::vector<uint32_t> release;  // values whose last reader is this step
  };
  ir::Graph graph_;
  Device device_;
  std::string label_;
  std::vector<Tensor> weights_;  // by value id; undefined for non-weights
  std::vector<Step> steps_;
  std::vector<Shape> planned_shapes_;
  bool planned_ = false;
};

}  // namespace spore::lite
