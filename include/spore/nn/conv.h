// Conv2d and the 2-D pooling layers (NCHW).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "spore/nn/cell.h"

namespace spore::nn {

// Hyper-parameters of Conv2d beyond (in, out, kernel), named and defaulted as MindSpore's
// nn.Conv2d (pad_mode "same", no bias). Pairs are (height, width); one value means both.
struct Conv2dConfig {
  std::vector<int64_t> stride{1};
  // "same": output extent ceil(in / stride), the padding split with the extra row/column at the
  //         bottom/right (as MindSpore and TensorFlow); "valid": no padding; "pad": `padding`.
  std::string pad_mode = "same";
  // Only with pad_mode "pad": 1 value (all sides), 2 (height, width) or 4 (top, bottom, left, right).
  std::vector<int64_t> padding{0};
  std::vector<int64_t> dilation{1};
  int64_t groups = 1;  // in_channels == groups == out_channels / k: depthwise
  bool has_bias = false;
  uint64_t seed = 0;
  DType dtype = DType::kFloat32;
};

// weight [out, in/groups, kh, kw], bias [out]. Initialization as PyTorch's nn.Conv2d (also
// MindSpore 2.x's default): weight he_uniform(a = sqrt(5)) = U(-1/sqrt(fan_in), 1/sqrt(fan_in)),
// fan_in = in/groups * kh * kw; bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)); seeds derive_seed(seed, 0/1).
class Conv2d final : public Cell {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, std::vector<int64_t> kernel_size, Conv2dConfig config = {});
  Tensor construct(const Tensor& x) override;
  std::string name() const override { return "Conv2d"; }

  Parameter& weight() { return weight_; }
  Parameter& bias() { return bias_; }  // undefined without has_bias
  // (top, bottom, left, right) padding this cell applies to an input of extent h x w.
  std::vector<int64_t> pads_for(int64_t h, int64_t w) const;

 private:
  int64_t in_, out_;
  int64_t kernel_[2], stride_[2], dilation_[2];
  std::vector<int64_t> pad_;  // 4 values for "pad"
  Conv2dConfig config_;
  Parameter weight_, bias_;
};

// PyTorch's MaxPool2d / AvgPool2d arguments: stride empty = kernel; padding symmetric; max pool
// pads with -inf, avg pool averages only the cells inside the input.
class MaxPool2d final : public Cell {
 public:
  MaxPool2d(std::vector<int64_t> kernel_size, std::vector<int64_t> stride = {}, std::vector<int64_t> padding = {0},
            bool ceil_mode = false);
  Tensor construct(const Tensor& x) override;
  std::string name() const override { return "MaxPool2d"; }

 private:
  std::vector<int64_t> kernel_, stride_, padding_;
  bool ceil_mode_;
};

class AvgPool2d final : public Cell {
 public:
  AvgPool2d(std::vector<int64_t> kernel_size, std::vector<int64_t> stride = {}, std::vector<int64_t> padding = {0},
            bool ceil_mode = false);
  Tensor construct(const Tensor& x) override;
  std::string name() const override { return "AvgPool2d"; }

 private:
  std::vector<int64_t> kernel_, stride_, padding_;
  bool ceil_mode_;
};

// Output (h, w), one value meaning both; PyTorch's window rule (see adaptive_avg_pool2d).
class AdaptiveAvgPool2d final : public Cell {
 public:
  explicit AdaptiveAvgPool2d(std::vector<int64_t> output_size);
  Tensor construct(const Tensor& x) override;
  std::string name() const override { return "AdaptiveAvgPool2d"; }

 private:
  std::vector<int64_t> output_size_;
};

}  // namespace spore::nn
