// Stateless layers: activations, Softmax, Flatten. Each wraps one op so autograd uses the op's rule.
#pragma once
#include <cstdint>
#include <string>

#include "spore/nn/cell.h"

namespace spore::nn {

class ReLU final : public Cell {
 public:
  Tensor construct(const Tensor& x) override;
  std::string name() const override { return "ReLU"; }
};

class ReLU6 final : public Cell {
 public:
  Tensor construct(const Tensor& x) override;
  std::string name() const override { return "ReLU6"; }
};

// approximate = false: x * Phi(x) with erf (PyTorch's default); true: the tanh approximation
// (MindSpore's nn.GELU default is approximate=True: pass it explicitly for parity with MindSpore).
class GELU final : public Cell {
 public:
  explicit GELU(bool approximate = false) : approximate_(approximate) {}
  Tensor construct(const Tensor& x) override;
  std::string name() const override { return "GELU"; }
  bool approximate() const { return approximate_; }

 private:
  bool approximate_;
};

class SiLU final : public Cell {
 public:
  Tensor construct(const Tensor& x) override;
  std::string name() const override { return "SiLU"; }
};

class Sigmoid final : public Cell {
 public:
  Tensor construct(const Tensor& x) override;
  std::string name() const override { return "Sigmoid"; }
};

class Tanh final : public Cell {
 public:
  Tensor construct(const Tensor& x) override;
  std::string name() const override { return "Tanh"; }
};

class Softmax final : public Cell {
 public:
  explicit Softmax(int64_t axis = -1) : axis_(axis) {}
  Tensor construct(const Tensor& x) override;
  std::string name() const override { return "Softmax"; }

 private:
  int64_t axis_;
};

class LogSoftmax final : public Cell {
 public:
  explicit LogSoftmax(int64_t axis = -1) : axis_(axis) {}
  Tensor construct(const Tensor& x) override;
  std::string name() const override { return "LogSoftmax"; }

 private:
  int64_t axis_;
};

// Flattens axes start..end into one (MindSpore's Flatten keeps the batch axis: start 1, end -1).
class Flatten final : public Cell {
 public:
  explicit Flatten(int64_t start_axis = 1, int64_t end_axis = -1) : start_(start_axis), end_(end_axis) {}
  Tensor construct(const Tensor& x) override;
  std::string name() const override { return "Flatten"; }

 private:
  int64_t start_, end_;
};

// The activation cell for a name as MindSpore's Dense(activation="relu") accepts: "relu",
// "relu6", "gelu", "silu"/"swish", "sigmoid", "tanh", "softmax", "logsoftmax". Empty: nullptr.
// Unknown names are kValue listing the known ones.
CellPtr make_activation(const std::string& name);

}  // namespace spore::nn
