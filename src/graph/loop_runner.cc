// The loop-step runner (NOTE [Control flow]).
#include "graph/loop_runner.h"

#include <string>

#include "graph/executor.h"
#include "spore/error.h"

namespace spore::graph {

LoopRunner::LoopRunner(const Graph& g, int node, std::span<const Tensor> example_inputs, bool plan_memory) {
  const Node& n = g.node(node);
  auto subs = g.subgraphs(node);
  if (n.op() == OpId::k_if_else && subs.size() == 2 && subs[0] && subs[1]) {
    // Each branch takes the node's inputs after the predicate and must return its outputs.
    branch_ = true;
    num_state_ = n.num_outputs;
    const std::vector<Tensor> examples(example_inputs.begin() + 1, example_inputs.end());
    auto outs = g.outputs(n);
    for (const auto& sub : subs) {
      bool same = sub->graph_inputs().size() == examples.size() && sub->graph_outputs().size() == outs.size();
      for (size_t k = 0; same && k < outs.size(); ++k) {
        const TensorMeta& want = g.value(outs[k]).meta;
        const TensorMeta& got = sub->value(sub->graph_outputs()[k]).meta;
        same = want.shape == got.shape && want.dtype == got.dtype;
      }
      if (!same)
        throw Error(ErrorCode::kInternal, "executor: node " + std::to_string(node) +
                                              " (if_else): a branch does not take the node's inputs after the predicate "
                                              "or does not return the node's outputs");
    }
    cond_ = std::make_unique<Executable>(subs[0], examples, std::vector<AttrBinding>{},
                                         std::vector<std::function<void()>>{}, plan_memory);
    body_ = std::make_unique<Executable>(subs[1], examples, std::vector<AttrBinding>{},
                                         std::vector<std::function<void()>>{}, plan_memory);
    return;
  }
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
  // NOTE [ONNX Loop at run time]: the body may return, after the next state, one-element bool
  // checks that must hold in every iteration (extents Lite planned from the loop's entry state).
  const auto body_outs = subs[1]->graph_outputs();
  if (body_outs.size() < (size_t)num_state_)
    throw Error(ErrorCode::kInternal, "executor: a while_loop body returns " + std::to_string(body_outs.size()) +
                                          " values for " + std::to_string(num_state_) + " state entries");
  for (size_t k = (size_t)num_state_; k < body_outs.size(); ++k) {
    const TensorMeta& m = subs[1]->value(body_outs[k]).meta;
    if (m.dtype != DType::kBool || m.shape.numel() != 1)
      throw Error(ErrorCode::kInternal, "executor: a while_loop body's check " + std::to_string(k - (size_t)num_state_) +
                                            " is not one bool element");
  }
  cond_ = std::make_unique<Executable>(subs[0], examples, std::vector<AttrBinding>{},
                                       std::vector<std::function<void()>>{}, plan_memory);
  body_ = std::make_unique<Executable>(subs[1], examples, std::vector<AttrBinding>{},
                                       std::vector<std::function<void()>>{}, plan_memory);
}

LoopRunner::~LoopRunner() = default;

std::vector<Tensor> LoopRunner::owned(std::vector<Tensor>& results, size_t n, std::span<const Tensor> inputs) {
  std::vector<Tensor> out(n);
  for (size_t i = 0; i < n; ++i) {
    bool shared = false;
    for (const Tensor& x : inputs) shared |= same_value(x, results[i]);
    for (size_t j = 0; j < i; ++j) shared |= same_value(out[j], results[i]);
    out[i] = shared ? results[i].clone() : std::move(results[i]);
  }
  return out;
}

std::vector<Tensor> LoopRunner::run_branch(std::span<const Tensor> inputs) {
  // The compiled graph runs outside any trace, so reading the predicate on the host is allowed.
  const bool then = inputs[0].item<uint8_t>() != 0;
  args_.assign(inputs.begin() + 1, inputs.end());
  std::vector<Tensor> results = (then ? cond_ : body_)->run(args_);
  args_.clear();
  return owned(results, (size_t)num_state_, inputs);
}

std::vector<Tensor> LoopRunner::run(std::span<const Tensor> inputs) {
  if (branch_) return run_branch(inputs);
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
    for (size_t k = (size_t)num_state_; k < next.size(); ++k)
      if (!next[k].item<uint8_t>())
        throw Error(ErrorCode::kValue, "while_loop: iteration " + std::to_string(done) + " broke check " +
                                           std::to_string(k - (size_t)num_state_) +
                                           " of its body: an extent planned from the loop's first state (a Slice or Range "
                                           "that moves with the iteration) came out different; Lite plans one shape per value");
    for (int i = 0; i < num_state_; ++i) args_[i] = std::move(next[i]);
  }
  // A state entry the body never replaced is still one of the node's inputs (or an invariant):
  // copied, so the node's output owns its memory as the plan assumes.
  std::vector<Tensor> out = owned(args_, (size_t)num_state_, inputs);
  args_.clear();
  return out;
}

}  // namespace spore::graph
