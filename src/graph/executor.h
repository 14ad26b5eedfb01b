// The graph executor (NOTE [Graph executor] in docs/design.md): every node planned once
// (PlannedOp), intermediates in buffers the memory plan allocated once, and a run that is a loop
// over flat arrays: no hashing, no std::function, no allocation per node beyond the graph's results.
#pragma once
#include <memory>
#include <vector>

#include "graph/passes/memory_plan.h"
#include "graph/tracer.h"
#include "spore/dispatch_plan.h"
#include "spore/graph.h"

namespace spore::graph {

class LoopRunner;  // loop_runner.h: a node with subgraphs (while_loop)

class Executable {
 public:
  // Plans every node of `g` for the devices of `example_inputs` (tensors of the graph inputs'
  // signature). `bindings` name nodes of `g` whose attributes are refreshed before each run.
  Executable(std::shared_ptr<const Graph> g, const std::vector<Tensor>& example_inputs,
             std::vector<AttrBinding> bindings, std::vector<std::function<void()>> effects, bool plan_memory);
  ~Executable();

  // Runs the graph on `inputs` (same signature as planned; the caller checked it).
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);

  const Graph& graph() const { return *graph_; }
  const MemoryPlan& memory_plan() const { return memory_; }

  // Per-step profile (Lite's SPORE_LITE_PROFILE): while on, each run adds the time of every step
  // (one per graph node, in order) to step_us(): the process CPU time, or with `wall` the
  // monotonic clock (what a multithreaded step costs the caller: CPU time also counts workers
  // that spin or wait).
  void set_profile(bool on, bool wall = false);
  const std::vector<double>& step_us() const { return profile_us_; }

 private:
  struct Step {
    uint32_t op;                  // index into ops_, or into loops_ when `loop` is set
    bool loop = false;            // a while_loop node, run by its LoopRunner (NOTE [Control flow])
    uint32_t in_first, num_in;    // into operand_ids_
    uint32_t out_first, num_out;  // into operand_ids_, and into preset_
    uint32_t drop_first, num_drop;  // values whose last use this is, into drop_ids_
  };
  std::shared_ptr<const Graph> graph_;
  std::vector<PlannedOp> ops_;
  std::vector<std::unique_ptr<LoopRunner>> loops_;
  std::vector<Step> steps_;
  std::vector<ValueId> operand_ids_, drop_ids_;
  std::vector<Tensor> preset_;   // by output slot of a step: the planned buffer, or undefined
  std::vector<Tensor> slots_;    // by ValueId: captured and constant values stay bound
  std::vector<Tensor> scratch_;  // a step's inputs, gathered
  std::vector<AttrBinding> bindings_;  // node -> index into ops_ (remapped: loops have no PlannedOp)
  std::vector<std::function<void()>> effects_;
  MemoryPlan memory_;
  bool planned_ = false;
  bool profile_ = false, profile_wall_ = false;
  std::vector<double> profile_us_;  // by step
};

}  // namespace spore::graph
