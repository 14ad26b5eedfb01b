// The function types that autograd (grad, value_and_grad) and graph mode (jit, export) both take,
// in a header of their own so that the graph library (below nn and autograd, NOTE [Graph
// library layering]) names them without including autograd's header.
#pragma once
#include <functional>
#include <vector>

#include "spore/tensor.h"

namespace spore {

// A function of tensors with one result.
using TensorFn = std::function<Tensor(const std::vector<Tensor>&)>;
// A function of tensors with several results.
using TensorsFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

}  // namespace spore
