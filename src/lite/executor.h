// Lite's executor (NOTE [Lite executor], NOTE [Lite runtime]): an IR graph rewritten at load
// (lite/optimize.h), planned node by node with the registry's PlannedOp into a flat list of steps
// whose intermediates live in buffers laid out once per plan (a memory plan), so a prediction
// allocates only the tensors it returns.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graph/loop_runner.h"
#include "lite/optimize.h"
#include "spore/dispatch_plan.h"
#include "spore/ir.h"

namespace spore::lite {

class Executor {
 public:
  // Binds the graph's weights on `device` (a copy only when the device is not the CPU), after
  // the load-time rewriting unless SPORE_LITE_FUSION=0.
  Executor(ir::Graph graph, Device device, std::string label);
  ~Executor();
  // Plans every node for inputs of these shapes (one per graph input), checking each planned
  // output against the shape and dtype the file declares; kFormat naming the node on a mismatch.
  void plan(const std::vector<Shape>& input_shapes);
  bool planned_for(const std::vector<Shape>& input_shapes) const { return planned_ && input_shapes == planned_shapes_; }
  // Inputs already checked against the signature and on the device. Runs of one executor take
  // turns (they share the planned buffers).
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
  const ir::Graph& graph() const { return graph_; }
  Device device() const { return device_; }
  const OptimizeStats& optimize_stats() const { return stats_; }
  int64_t planned_bytes() const { return planned_bytes_; }

 private:
  struct Step {
    std::unique_ptr<PlannedOp> op;  // null for a while_loop, which `loop` runs
    std::shared_ptr<const graph::Graph> loop_graph;  // NOTE [Lite control flow]
    std::unique_ptr<graph::LoopRunner> loop;
    std::vector<uint32_t> inputs, outputs;
    std::vector<Tensor> preset;     // per output: its planned buffer, or undefined (allocated by the run)
    std::vector<uint32_t> release;  // values whose last reader is this step
  };
  ir::Graph graph_;
  Device device_;
  std::string label_;
  OptimizeStats stats_;
  std::vector<Tensor> weights_;  // by value id; undefined for non-weights
  std::vector<Step> steps_;
  std::vector<Shape> planned_shapes_;
  bool planned_ = false;
  int64_t planned_bytes_ = 0;
  mutable std::mutex run_mu_;
  // SPORE_LITE_PROFILE=1: time per op, printed when the executor goes away; 2: per step too.
  bool profile_ = false;
  int profile_level_ = 0;
  mutable std::vector<double> profile_us_;
  mutable int64_t profile_runs_ = 0;
  mutable bool profile_first_run_done_ = false;
};

}  // namespace spore::lite
