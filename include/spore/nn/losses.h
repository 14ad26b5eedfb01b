// Loss functions and their Cells. Reductions: "mean" (default), "sum", "none" (per element).
// Errors: logits and labels whose shapes do not fit -> kShape naming the loss and both shapes;
// a wrong dtype (integer logits, floating class indices, ...) -> kDType; a bad reduction or
// label_smoothing -> kValue. Formulas are PyTorch's (torch.nn.functional) so values match it.
#pragma once
#include <cstdint>
#include <string>

#include "spore/nn/cell.h"

namespace spore::nn {

// mean((logits - labels)^2); shapes must be equal (no silent broadcasting).
Tensor mse_loss(const Tensor& logits, const Tensor& labels, const std::string& reduction = "mean");
// mean(|logits - labels|).
Tensor l1_loss(const Tensor& logits, const Tensor& labels, const std::string& reduction = "mean");

// logits [N, C, d1, ...] or [C] (class axis 1, or 0 for 1-D). labels either
//  * class indices, int32/int64, shape [N, d1, ...] (or 0-d): loss = (1 - ls) * nll + ls * mean_c(-log_softmax);
//    entries equal to ignore_index contribute 0 and "mean" divides by the number of other entries;
//  * class probabilities, floating, the shape of logits: loss = -sum_c (labels*(1-ls) + ls/C) * log_softmax;
//    "mean" divides by the number of loss elements (N * d1 * ...).
// ls = label_smoothing in [0, 1].
Tensor cross_entropy(const Tensor& logits, const Tensor& labels, const std::string& reduction = "mean",
                     double label_smoothing = 0.0, int64_t ignore_index = -100);
// log_probs [N, C, d1, ...] or [C], labels int32/int64 [N, d1, ...]: -log_probs[n, label[n]].
Tensor nll_loss(const Tensor& log_probs, const Tensor& labels, const std::string& reduction = "mean",
                int64_t ignore_index = -100);
// max(x, 0) - x*y + log(1 + exp(-|x|)): stable for any x; labels floating in [0, 1], same shape.
Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& labels,
                                        const std::string& reduction = "mean");

// A loss as a Cell (MindSpore's LossBase): call it with (logits, labels). It has no parameters;
// construct(x) with one input is an error. Under to_float the floating inputs are cast like any
// cell's.
class LossBase : public Cell {
 public:
  // `loss` names the loss in the error for a bad reduction.
  LossBase(std::string reduction, const std::string& loss);
  Tensor construct(const Tensor& x) override;  // kValue: a loss needs (logits, labels)
  virtual Tensor forward(const Tensor& logits, const Tensor& labels) = 0;
  Tensor operator()(const Tensor& logits, const Tensor& labels);
  const std::string& reduction() const { return reduction_; }

 protected:
  std::string reduction_;
};

class MSELoss final : public LossBase {
 public:
  explicit MSELoss(std::string reduction = "mean") : LossBase(std::move(reduction), "MSELoss") {}
  Tensor forward(const Tensor& logits, const Tensor& labels) override;
  std::string name() const override { return "MSELoss"; }
};

class L1Loss final : public LossBase {
 public:
  explicit L1Loss(std::string reduction = "mean") : LossBase(std::move(reduction), "L1Loss") {}
  Tensor forward(const Tensor& logits, const Tensor& labels) override;
  std::string name() const override { return "L1Loss"; }
};

class CrossEntropyLoss final : public LossBase {
 public:
  explicit CrossEntropyLoss(std::string reduction = "mean", double label_smoothing = 0.0,
                            int64_t ignore_index = -100);
  Tensor forward(const Tensor& logits, const Tensor& labels) override;
  std::string name() const override { return "CrossEntropyLoss"; }

 private:
  double label_smoothing_;
  int64_t ignore_index_;
};

class NLLLoss final : public LossBase {
 public:
  explicit NLLLoss(std::string reduction = "mean", int64_t ignore_index = -100)
      : LossBase(std::move(reduction), "NLLLoss"), ignore_index_(ignore_index) {}
  Tensor forward(const Tensor& logits, const Tensor& labels) override;
  std::string name() const override { return "NLLLoss"; }

 private:
  int64_t ignore_index_;
};

class BCEWithLogitsLoss final : public LossBase {
 public:
  explicit BCEWithLogitsLoss(std::string reduction = "mean") : LossBase(std::move(reduction), "BCEWithLogitsLoss") {}
  Tensor forward(const Tensor& logits, const Tensor& labels) override;
  std::string name() const override { return "BCEWithLogitsLoss"; }
};

}  // namespace spore::nn
