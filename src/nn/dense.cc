#include "spore/nn/dense.h"

#include <cmath>

#include "nn_util.h"
#include "spore/nn/activation.h"
#include "spore/nn/init.h"
#include "spore/ops.h"

namespace spore::nn {

Dense::Dense(int64_t in_channels, int64_t out_channels, bool has_bias, CellPtr activation, uint64_t seed,
             DType dtype)
    : in_(in_channels), out_(out_channels), activation_(std::move(activation)) {
  detail::check_positive("Dense", "in_channels", in_channels);
  detail::check_positive("Dense", "out_channels", out_channels);
  detail::check_floating_dtype("Dense", dtype);
  // PyTorch's nn.Linear default (kaiming_uniform with a = sqrt(5)): bound 1/sqrt(in) for both.
  const double bound = 1.0 / std::sqrt((double)in_channels);
  weight_ = register_parameter(
      "weight", init::he_uniform({out_channels, in_channels}, init::derive_seed(seed, 0), std::sqrt(5.0), "fan_in",
                                 "leaky_relu", dtype));
  if (has_bias)
    bias_ = register_parameter("bias", init::uniform({out_channels}, init::derive_seed(seed, 1), -bound, bound, dtype));
  if (activation_) register_cell("activation", activation_);
}

Dense::Dense(int64_t in_channels, int64_t out_channels, bool has_bias, const std::string& activation,
             uint64_t seed, DType dtype)
    : Dense(in_channels, out_channels, has_bias, make_activation(activation), seed, dtype) {}

Tensor Dense::construct(const Tensor& x) {
  detail::check_floating_input("Dense", x);
  if (x.ndim() == 0 || x.shape()[x.ndim() - 1] != in_)
    throw Error(ErrorCode::kShape, "Dense: input shape " + x.shape().str() + " does not end in in_channels = " +
                                       std::to_string(in_) + "; the layer maps [..., " + std::to_string(in_) +
                                       "] to [..., " + std::to_string(out_) + "]");
  Tensor y = matmul(x, transpose(param(weight_), 0, 1));
  if (bias_.defined()) y = add(y, param(bias_));
  if (activation_) y = (*activation_)(y);
  return y;
}

Embedding::Embedding(int64_t vocab_size, int64_t embedding_size, uint64_t seed, DType dtype) {
  detail::check_positive("Embedding", "vocab_size", vocab_size);
  detail::check_positive("Embedding", "embedding_size", embedding_size);
  detail::check_floating_dtype("Embedding", dtype);
  table_ = register_parameter("embedding_table", init::normal({vocab_size, embedding_size}, seed, 0, 1, dtype));
}

Tensor Embedding::construct(const Tensor& ids) {
  if (ids.dtype() != DType::kInt32 && ids.dtype() != DType::kInt64)
    throw Error(ErrorCode::kDType, "Embedding: ids must be int32 or int64, got " +
                                       std::string(dtype_name(ids.dtype())) + " " + ids.shape().str());
  return embedding(ids, param(table_));
}

}  // namespace spore::nn
