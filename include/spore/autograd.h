// Reverse-mode automatic differentiation (NOTE [Autodiff]).
//
// NOTE [Autodiff]
// A function of tensors runs eagerly while a Tape (a gradient-recording DispatchObserver) records,
// as Nodes (include/spore/node.h), every op whose inputs depend on the differentiated tensors
// (the sources). Backward walks the nodes in
// reverse, calling each op's backward rule from the registry (OpDef::backward, written with ops,
// next to the op's definition) and summing gradients per tensor. Because rules are ops, the
// backward pass is itself recorded by an enclosing tape: gradients of gradients work, and graph
// mode can differentiate traced graphs with the same rules. Tensors are identified by their
// TensorImpl: views made inside the function are new tensors whose gradient flows back through
// the view op's rule. Only floating-point tensors carry gradients.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "spore/parameter.h"
#include "spore/tensor.h"
#include "spore/tensor_fn.h"

namespace spore {

struct ValueAndGrad {
  Tensor value;
  std::vector<Tensor> input_grads;   // one per entry of grad_position, in that order
  std::vector<Tensor> weight_grads;  // one per weight, in the order given
};

// Which inputs of fn to differentiate: MindSpore's grad_position (an int, a tuple, or None).
struct GradPosition {
  std::vector<int> positions;
  GradPosition() : positions{0} {}  // default: the first input, as MindSpore
  GradPosition(int p) : positions{p} {}
  GradPosition(std::initializer_list<int> ps) : positions(ps) {}
  static GradPosition none() {
    GradPosition g;
    g.positions.clear();
    return g;
  }
};

// Returns a function that evaluates fn(inputs) and its gradients. The output must be a scalar
// (one element) unless `sens` (the output's cotangent) is given. Errors (kValue):
//   * a grad_position outside the inputs;
//   * a non-empty weights list none of which the function uses (the chapter's "gradient
//     computed, weights unchanged" would otherwise train nothing in silence);
//   * an op on the path with no backward rule (kUnsupported, naming the op).
// Weights are resolved to their current values at each call (Parameter::value()).
// A single weight or input that the output does not depend on gets a zero gradient.
//
// NOTE [Gradient-ready hook]
// `on_weight_grad` (optional) is called once per weight and call, with the weight's index in
// `weights` and its final gradient, as soon as the backward walk has passed the earliest
// recorded op that reads the weight (no later rule can add to it), in the order the walk
// finishes them (the last layer first); weights the output does not depend on are reported
// after the walk, with their zero gradient. Data parallelism (include/spore/dist.h) starts a
// bucket's all-reduce from it while the rest of backward runs. The hook must not change the
// tensor it is given; weight_grads still holds every gradient when the call returns.
using WeightGradHook = std::function<void(size_t weight_index, const Tensor& grad)>;
std::function<ValueAndGrad(const std::vector<Tensor>&)> value_and_grad(
    TensorFn fn, GradPosition grad_position = {}, std::vector<Parameter> weights = {},
    std::optional<Tensor> sens = std::nullopt, WeightGradHook on_weight_grad = nullptr);

// grad(): value_and_grad without the value.
std::function<ValueAndGrad(const std::vector<Tensor>&)> grad(TensorFn fn, GradPosition grad_position = {},
                                                              std::vector<Parameter> weights = {});


// No gradient recording in its scope (inference, optimizer updates) by the tapes already open;
// other observers (a graph tracer) still see every op (NOTE [Dispatch observers]).
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  int token_;
};

}  // namespace spore
