// Lite's executor (NOTE [Lite executor], NOTE [Lite runtime]): a thin adapter from a file's IR
// graph to the graph library. Each input signature is planned once: the IR graph becomes a
// graph::Graph (lite/plan_graph.h), Lite's pass pipeline rewrites it (the graph library's passes,
// with the inference rewrites: BatchNorm folding, fused convolution, GELU, constant folding up to
// 64 MiB), and graph::Executable runs it over its memory plan, as jit does.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graph/executor.h"
#include "spore/graph.h"
#include "spore/ir.h"

namespace spore::lite {

// False when SPORE_LITE_FUSION=0: the graph runs as the file wrote it, no pass applied (tests
// compare the two; it must equal eager mode bit for bit).
bool fusion_enabled();

class Executor {
 public:
  // Checks what Lite cannot run (subgraphs other than while_loop's, collectives) and binds the
  // graph's weights on `device` (a copy only when the device is not the CPU).
  Executor(ir::Graph graph, Device device, std::string label);
  ~Executor();
  // Plans the graph for inputs of these shapes (one per graph input): kFormat naming the node
  // where a computed output contradicts what the file declares. The plans of up to
  // kKeptPlans earlier signatures are kept, so a model run with alternating shapes plans each once.
  void plan(const std::vector<Shape>& input_shapes);
  bool planned_for(const std::vector<Shape>& input_shapes) const { return exe_ && input_shapes == planned_shapes_; }
  static constexpr size_t kKeptPlans = 4;
  int plans_made() const { return plans_made_; }  // signatures planned (kept ones reused, not counted)
  // Inputs already checked against the signature and on the device. Runs of one executor take
  // turns (they share the planned buffers).
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
  // The graph as the file declares it (its inputs' and outputs' names, dtypes, symbols).
  const ir::Graph& graph() const { return graph_; }
  // The graph that runs, after the passes (null before the first plan).
  const graph::Graph* planned_graph() const { return exe_ ? &exe_->graph() : nullptr; }
  const std::vector<graph::PassStats>& pass_stats() const { return passes_; }
  Device device() const { return device_; }
  int64_t planned_bytes() const { return exe_ ? exe_->memory_plan().planned_bytes : 0; }

 private:
  void print_profile() const;

  ir::Graph graph_;
  Device device_;
  std::string label_;
  std::vector<Tensor> weights_;  // by IR value id; undefined for non-weights
  bool symbolic_ = false;        // some input extent is symbolic: other signatures may be planned
  std::unique_ptr<graph::Executable> exe_;
  std::vector<graph::PassStats> passes_;
  std::vector<Shape> planned_shapes_;
  struct Kept {
    std::vector<Shape> shapes;
    std::unique_ptr<graph::Executable> exe;
    std::vector<graph::PassStats> passes;
  };
  std::vector<Kept> kept_;  // earlier signatures' plans, most recent last
  int plans_made_ = 0;
  mutable std::mutex run_mu_;
  // SPORE_LITE_PROFILE=1: time per op, printed when the executor goes away; 2: per step too.
  int profile_level_ = 0;
  bool profile_wall_ = false;  // SPORE_LITE_PROFILE_CLOCK=wall
  mutable int64_t profile_runs_ = 0;
};

}  // namespace spore::lite
