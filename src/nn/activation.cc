#include "spore/nn/activation.h"

#include "spore/ops.h"

namespace spore::nn {

Tensor ReLU::construct(const Tensor& x) { return relu(x); }
Tensor ReLU6::construct(const Tensor& x) { return relu6(x); }
Tensor GELU::construct(const Tensor& x) { return gelu(x, approximate_); }
Tensor SiLU::construct(const Tensor& x) { return silu(x); }
Tensor Sigmoid::construct(const Tensor& x) { return sigmoid(x); }
Tensor Tanh::construct(const Tensor& x) { return tanh(x); }
Tensor Softmax::construct(const Tensor& x) { return softmax(x, axis_); }
Tensor LogSoftmax::construct(const Tensor& x) { return log_softmax(x, axis_); }

Tensor Flatten::construct(const Tensor& x) { return flatten(x, start_, end_); }

CellPtr make_activation(const std::string& name) {
  if (name.empty()) return nullptr;
  if (name == "relu") return std::make_shared<ReLU>();
  if (name == "relu6") return std::make_shared<ReLU6>();
  if (name == "gelu") return std::make_shared<GELU>();
  if (name == "silu" || name == "swish") return std::make_shared<SiLU>();
  if (name == "sigmoid") return std::make_shared<Sigmoid>();
  if (name == "tanh") return std::make_shared<Tanh>();
  if (name == "softmax") return std::make_shared<Softmax>();
  if (name == "logsoftmax") return std::make_shared<LogSoftmax>();
  throw Error(ErrorCode::kValue, "make_activation: unknown activation '" + name +
                                     "' (known: relu, relu6, gelu, silu, swish, sigmoid, tanh, softmax, "
                                     "logsoftmax)");
}

}  // namespace spore::nn
