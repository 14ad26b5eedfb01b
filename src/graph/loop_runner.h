// Runs a while_loop node of a compiled graph (NOTE [Control flow] in docs/design.md): its
// condition and body subgraphs are each planned once, as executables of their own, and run until
// the condition's value is false.
#pragma once
#include <memory>
#include <span>
#include <vector>

#include "spore/graph.h"

namespace spore::graph {

class Executable;

class LoopRunner {
 public:
  // `node` of `g` is a while_loop; `example_inputs` are tensors of its inputs' signature.
  LoopRunner(const Graph& g, int node, std::span<const Tensor> example_inputs, bool plan_memory);
  ~LoopRunner();
  // The final state, as fresh tensors (never one of `inputs`: the memory plan may reuse those).
  TensorList run(std::span<const Tensor> inputs);

 private:
  std::unique_ptr<Executable> cond_, body_;
  int num_state_ = 0;
  int64_t max_iterations_ = 0;
  std::vector<Tensor> args_;  // state then invariants, reused across runs
};

}  // namespace spore::graph
