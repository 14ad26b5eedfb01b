// The loop-step runner (NOTE [Control flow]).
#include "graph/loop_runner.h"

#include <string>

#include "graph/executor.h"
#include "spore/error.h"

namespace spore::graph {

LoopRunner::LoopRunner(const Graph& g, int node, std::span<const Tensor> example_inputs, bool plan_memory) {
  const Node& n = g.node(node);
  auto subs = g.subgraphs(node);
  if (n.op() != OpId::k_while_loop || subs.size() != 2 || !subs[0] || !subs[1])
    throw Error(ErrorCode::kInternal, std::string("executor: node ") + std::to_string(node) + " (" + n.def->name +
                                          ") is not a while_loop with a condition and a body");
  num_state_ = (int)n.attrs.i(0);
  max_iterations_ = n.attrs.i(1);
  std::vector<Tensor> examples(example_inputs.begin(), example_inputs.end());
  for (const auto& sub : subs)
    if (sub->graph_inputs().size() != examples.size())
      throw Error(ErrorCode::kInternal, "executor: a while_loop subgraph takes " +
                                            std::to_string(sub->graph_inputs().size()) + " inputs, the node has " +
                                            std::to_string(examples.size()));
  cond_ = std::make_unique<Executable>(subs[0], examples, std::vector<AttrBinding>{},
                                       std::vector<std::function<void()>>{}, plan_memory);
  body_ = std::make_unique<Executable>(subs[1], examples, std::vector<AttrBinding>{},
                                       std::vector<std::function<void()>>{}, plan_memory);
}

LoopRunner::~LoopRunner() = default;

TensorList LoopRunner::run(std::span<const Tensor> inputs) {
  args_.assign(inputs.begin(), inputs.end());
  for (int64_t done = 0;; ++done) {
    // The compiled graph runs outside any trace, so reading the condition on the host is allowed.
    const Tensor c = cond_->run(args_)[0];
    if (!c.item<uint8_t>()) break;
    if (max_iterations_ > 0 && done >= max_iterations_)
      throw Error(ErrorCode::kValue, "while_loop: the body ran max_iterations (" + std::to_string(max_iterations_) +
                                         ") times and the condition still holds; raise WhileOptions::max_iterations "
                                         "or check that the body moves the state towards the condition's end");
    std::vector<Tensor> next = body_->run(args_);
    for (int i = 0; i < num_state_; ++i) args_[i] = std::move(next[i]);
  }
  TensorList out;
  out.resize(num_state_);
  for (int i = 0; i < num_state_; ++i) {
    // A state entry the body never replaced is still one of the node's inputs (or an invariant):
    // copy it, so the node's output owns its memory as the plan assumes.
    bool shared = false;
    for (const Tensor& x : inputs) shared |= same_value(x, args_[i]);
    for (int j = 0; j < i; ++j) shared |= same_value(out[j], args_[i]);
    out[i] = shared ? args_[i].clone() : std::move(args_[i]);
  }
  args_.clear();
  return out;
}

}  // namespace spore::graph
