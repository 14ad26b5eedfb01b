// Control flow on tensor values that jit can trace (NOTE [Control flow] in docs/design.md),
// after JAX's lax.cond and lax.while_loop.
//
// A C++ `if` on a tensor's value cannot be traced (the tracer refuses the host read). cond says
// the branch in ops instead: eagerly it reads `pred` and runs the branch taken (a tape sees that
// branch, so gradients flow through it); traced, both branches are recorded and every result is
// chosen elementwise by `pred` (a `where` node), so the graph never bakes in the branch of the
// call it was traced on, and gradients flow through the taken branch (where's rule gives the
// other branch zeros). Branches must therefore be free of side effects, as in JAX.
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

// state = body_fn(state) while cond_fn(state) holds (a one-element bool tensor). Eager only for
// now: inside a jit trace it raises kUnsupported (the trip count would need a loop node with
// subgraphs in the executor; see NOTE [Control flow]).
std::vector<Tensor> while_loop(const BranchFn& cond_fn, const BranchFn& body_fn, std::vector<Tensor> state);

}  // namespace spore
