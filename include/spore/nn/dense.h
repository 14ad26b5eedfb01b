// Dense (fully connected) and Embedding layers.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "spore/nn/cell.h"

namespace spore::nn {

// y = activation(x @ weight^T + bias); weight [out, in], bias [out] (MindSpore's and PyTorch's
// layout). x is [..., in]. Initialization follows PyTorch's nn.Linear (also MindSpore 2.x's
// default): weight he_uniform(a = sqrt(5)), i.e. U(-1/sqrt(in), 1/sqrt(in)), bias
// U(-1/sqrt(in), 1/sqrt(in)); the weight draws with init::derive_seed(seed, 0), the bias with
// derive_seed(seed, 1).
class Dense final : public Cell {
 public:
  Dense(int64_t in_channels, int64_t out_channels, bool has_bias = true, CellPtr activation = nullptr,
        uint64_t seed = 0, DType dtype = DType::kFloat32);
  // activation by name (make_activation): Dense(4, 8, true, "relu", seed).
  Dense(int64_t in_channels, int64_t out_channels, bool has_bias, const std::string& activation,
        uint64_t seed = 0, DType dtype = DType::kFloat32);
  Dense(int64_t in_channels, int64_t out_channels, bool has_bias, const char* activation, uint64_t seed = 0,
        DType dtype = DType::kFloat32)
      : Dense(in_channels, out_channels, has_bias, std::string(activation), seed, dtype) {}
  // No activation, spelled nullptr (which would otherwise match both the CellPtr and the name).
  Dense(int64_t in_channels, int64_t out_channels, bool has_bias, std::nullptr_t, uint64_t seed = 0,
        DType dtype = DType::kFloat32)
      : Dense(in_channels, out_channels, has_bias, CellPtr{}, seed, dtype) {}
  Tensor construct(const Tensor& x) override;
  std::string name() const override { return "Dense"; }

  Parameter& weight() { return weight_; }
  Parameter& bias() { return bias_; }  // undefined when has_bias is false
  int64_t in_channels() const { return in_; }
  int64_t out_channels() const { return out_; }

 private:
  int64_t in_, out_;
  Parameter weight_, bias_;
  CellPtr activation_;
};

// Rows of embedding_table [vocab, dim] for integer ids of any shape: ids.shape + [dim].
// Initialization: N(0, 1) as PyTorch's nn.Embedding (seed as given).
class Embedding final : public Cell {
 public:
  Embedding(int64_t vocab_size, int64_t embedding_size, uint64_t seed = 0, DType dtype = DType::kFloat32);
  Tensor construct(const Tensor& ids) override;
  std::string name() const override { return "Embedding"; }
  Parameter& embedding_table() { return table_; }

 private:
  Parameter table_;
};

}  // namespace spore::nn
