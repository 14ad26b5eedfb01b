// Normalisation layers and Dropout, written as compositions of ops (mean, var, rsqrt, mul, add,
// where, random_uniform) so that autograd differentiates them through the ops' own rules.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "spore/nn/cell.h"

namespace spore::nn {

// NOTE [BatchNorm statistics]
// Training: normalise with the batch mean and the biased batch variance over every axis but the
// channel axis 1, then update the running statistics under NoGradGuard (no tape entries):
//   moving = momentum * moving + (1 - momentum) * batch    (MindSpore's momentum, default 0.9;
//   PyTorch's momentum m corresponds to 1 - m here)
// with the UNBIASED batch variance for moving_variance, as PyTorch. Evaluation normalises with
// the moving statistics. gamma/beta are trainable (when affine); moving_mean/moving_variance are
// Parameters with requires_grad false, so trainable_params excludes them and checkpoints keep
// them. Names as MindSpore: gamma, beta, moving_mean, moving_variance. They stay float32 (or the
// dtype given) under to_float: the update casts the batch statistics to their dtype.
class BatchNorm : public Cell {
 public:
  Tensor construct(const Tensor& x) override;

  Parameter& gamma() { return gamma_; }
  Parameter& beta() { return beta_; }
  Parameter& moving_mean() { return moving_mean_; }
  Parameter& moving_variance() { return moving_var_; }

 protected:
  BatchNorm(int64_t num_features, double eps, double momentum, bool affine, DType dtype,
            std::vector<int> accepted_ranks);

 private:
  int64_t c_;
  double eps_, momentum_;
  bool affine_;
  std::vector<int> ranks_;
  Parameter gamma_, beta_, moving_mean_, moving_var_;
};

// Input [N, C] or [N, C, L].
class BatchNorm1d final : public BatchNorm {
 public:
  explicit BatchNorm1d(int64_t num_features, double eps = 1e-5, double momentum = 0.9, bool affine = true,
                       DType dtype = DType::kFloat32)
      : BatchNorm(num_features, eps, momentum, affine, dtype, {2, 3}) {}
  std::string name() const override { return "BatchNorm1d"; }
};

// Input [N, C, H, W].
class BatchNorm2d final : public BatchNorm {
 public:
  explicit BatchNorm2d(int64_t num_features, double eps = 1e-5, double momentum = 0.9, bool affine = true,
                       DType dtype = DType::kFloat32)
      : BatchNorm(num_features, eps, momentum, affine, dtype, {4}) {}
  std::string name() const override { return "BatchNorm2d"; }
};

// Normalises over the trailing axes given by normalized_shape (biased variance), then
// * gamma + beta (shape normalized_shape; ones/zeros initially) when elementwise_affine.
class LayerNorm final : public Cell {
 public:
  explicit LayerNorm(std::vector<int64_t> normalized_shape, double eps = 1e-5, bool elementwise_affine = true,
                     DType dtype = DType::kFloat32);
  Tensor construct(const Tensor& x) override;
  std::string name() const override { return "LayerNorm"; }
  Parameter& gamma() { return gamma_; }
  Parameter& beta() { return beta_; }

 private:
  std::vector<int64_t> shape_;
  double eps_;
  bool affine_;
  Parameter gamma_, beta_;
};

// x * rsqrt(mean(x^2 over the last axis) + eps) * weight; weight [dim], ones initially.
class RMSNorm final : public Cell {
 public:
  explicit RMSNorm(int64_t dim, double eps = 1e-6, DType dtype = DType::kFloat32);
  Tensor construct(const Tensor& x) override;
  std::string name() const override { return "RMSNorm"; }
  Parameter& weight() { return weight_; }

 private:
  int64_t dim_;
  double eps_;
  Parameter weight_;
};

// Zeroes each element with probability p and scales the kept ones by 1 / (1 - p) in training;
// the identity in evaluation (MindSpore 2.x's p, not the old keep_prob). Call k in training draws
// its mask from random_uniform with seed init::derive_seed(seed, k): reproducible for a given
// seed and call sequence, a new mask every call.
class Dropout final : public Cell {
 public:
  explicit Dropout(double p = 0.5, uint64_t seed = 0);
  Tensor construct(const Tensor& x) override;
  std::string name() const override { return "Dropout"; }
  double p() const { return p_; }
  uint64_t calls() const { return calls_; }  // masks drawn so far

 private:
  double p_;
  uint64_t seed_;
  uint64_t calls_ = 0;
};

}  // namespace spore::nn
