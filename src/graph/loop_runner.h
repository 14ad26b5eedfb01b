// Runs a node with subgraphs of a compiled graph (NOTE [Control flow] in docs/design.md): a
// while_loop's condition and body subgraphs are each planned once, as executables of their own,
// and run until the condition's value is false; an if_else's then and else branches are planned
// the same way and the one its predicate selects runs (NOTE [Lite control flow]).
#pragma once
#include <memory>
#include <span>
#include <vector>

#include "spore/graph.h"

namespace spore::graph {

class Executable;

class LoopRunner {
 public:
  // `node` of `g` is a while_loop or an if_else; `example_inputs` are tensors of its inputs' signature.
  LoopRunner(const Graph& g, int node, std::span<const Tensor> example_inputs, bool plan_memory);
  ~LoopRunner();
  // The final state (or the taken branch's results), as fresh tensors (never one of `inputs`: the
  // memory plan may reuse those). A vector, not a TensorList: a loop may carry more values than
  // an op's fixed output array holds (NOTE [Control-flow results]).
  std::vector<Tensor> run(std::span<const Tensor> inputs);

 private:
  std::vector<Tensor> run_branch(std::span<const Tensor> inputs);
  // A result that is one of `inputs` (or an earlier result) copied, so that the node owns it.
  static std::vector<Tensor> owned(std::vector<Tensor>& results, size_t n, std::span<const Tensor> inputs);

  bool branch_ = false;               // an if_else: cond_ is the then branch, body_ the else branch
  std::unique_ptr<Executable> cond_, body_;
  int num_state_ = 0;
  int64_t max_iterations_ = 0;
  std::vector<Tensor> args_;  // state then invariants, reused across runs
};

}  // namespace spore::graph
