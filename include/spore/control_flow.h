// Control flow on tensor values that jit can trace (NOTE [Control flow] in docs/design.md),
// after JAX's lax.cond and lax.while_loop.
//
// A C++ `if` on a tensor's value cannot be traced (the tracer refuses the host read). cond says
// the branch in ops instead: eagerly it reads `pred` and runs the branch taken (a tape sees that
// branch, so gradients flow through it); traced, both branches are recorded and every result is
// chosen elementwise by `pred` (a `where` node), so the graph never bakes in the branch of the
// call it was traced on, and gradients flow through the taken branch (where's rule gives the
// other branch zeros). Branches must therefore be free of side effects, as in JAX.
// while_loop is a registry op with subgraphs: traced, its condition and body become subgraphs of
// one node that the graph executor runs until the condition is false.
#pragma once
#include <functional>
#include <vector>

#include "spore/tensor.h"

namespace spore {

using BranchFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// pred: a one-element bool tensor. Both branches take `operands` and must return the same number
// of results with the same shapes and dtypes (kShape / kDType naming the result otherwise).
std::vector<Tensor> cond(const Tensor& pred, const BranchFn& then_fn, const BranchFn& else_fn,
                         const std::vector<Tensor>& operands);

struct WhileOptions {
  // A guard against a loop that never ends: more than this many runs of the body is a kValue
  // error naming the count (0: no bound). Kept in the compiled node, so it holds in graph mode too.
  int64_t max_iterations = 0;
};

// state = body_fn(state) while cond_fn(state) holds (a one-element bool tensor). The body must
// return tensors of the state's shapes and dtypes (kShape naming the state entry otherwise).
// Eagerly it is a C++ loop of ops (a tape sees every iteration). Traced (jit), cond_fn and
// body_fn are each traced once from the state's signature into subgraphs of one `while_loop`
// node, which the graph executor runs until the condition is false, so the trip count may
// change between calls without re-tracing. Tensors the functions read but did not receive
// become extra inputs of the node. A traced loop holds any number of state tensors (up to
// kMaxControlResults), and reverse-mode gradients through it are refused at trace time (as JAX does): loop a fixed number of times in
// C++ (the trace unrolls it) or use cond. See NOTE [Control flow].
std::vector<Tensor> while_loop(const BranchFn& cond_fn, const BranchFn& body_fn, std::vector<Tensor> state,
                               const WhileOptions& options = {});

}  // namespace spore
