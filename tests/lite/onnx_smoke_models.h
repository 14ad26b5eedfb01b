// The chapter's smoke models (issue 10 item 6) in Spore's nn with fixed-seed initialisation:
// AddNet (x + y) and MobileNetV2 (inverted residual blocks of 1x1 expand, 3x3 depthwise and 1x1
// project convolutions with BatchNorm and ReLU6; Sandler et al. 2018, the torchvision layout).
// The BatchNorm statistics and affine parameters are drawn from fixed seeds too, so that the
// inference-mode normalisation is not the identity.
#pragma once
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "spore/nn/activation.h"
#include "spore/nn/cell.h"
#include "spore/nn/conv.h"
#include "spore/nn/dense.h"
#include "spore/nn/init.h"
#include "spore/nn/normalization.h"
#include "spore/ops.h"

namespace spore::onnx_models {

// conv (no bias) + BatchNorm2d + optional ReLU6.
class ConvBN final : public nn::Cell {
 public:
  ConvBN(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t groups, bool relu, uint64_t seed) : relu_(relu) {
    nn::Conv2dConfig cfg;
    cfg.stride = {stride};
    cfg.pad_mode = "pad";
    cfg.padding = {kernel / 2};
    cfg.groups = groups;
    cfg.seed = seed;
    conv_ = register_cell("conv", std::make_shared<nn::Conv2d>(in, out, std::vector<int64_t>{kernel, kernel}, cfg));
    bn_ = register_cell("bn", std::make_shared<nn::BatchNorm2d>(out));
    for (auto& [name, p] : bn_->named_parameters()) {
      const uint64_t s = nn::init::derive_seed(seed, name.size());
      if (name == "gamma") p.set_value(nn::init::uniform({out}, s, 0.5, 1.5));
      if (name == "beta") p.set_value(nn::init::normal({out}, s, 0.0, 0.1));
      if (name == "moving_mean") p.set_value(nn::init::normal({out}, s + 1, 0.0, 0.1));
      if (name == "moving_variance") p.set_value(nn::init::uniform({out}, s + 2, 0.5, 1.5));
    }
  }
  Tensor construct(const Tensor& x) override {
    Tensor y = (*bn_)((*conv_)(x));
    return relu_ ? relu6(y) : y;
  }
  std::string name() const override { return "ConvBN"; }

 private:
  bool relu_;
  std::shared_ptr<nn::Conv2d> conv_;
  std::shared_ptr<nn::BatchNorm2d> bn_;
};

class InvertedResidual final : public nn::Cell {
 public:
  InvertedResidual(int64_t in, int64_t out, int64_t stride, int64_t expand, uint64_t seed)
      : residual_(stride == 1 && in == out) {
    const int64_t hidden = in * expand;
    std::vector<nn::CellPtr> layers;
    if (expand != 1) layers.push_back(std::make_shared<ConvBN>(in, hidden, 1, 1, 1, true, seed * 8 + 1));
    layers.push_back(std::make_shared<ConvBN>(hidden, hidden, 3, stride, hidden, true, seed * 8 + 2));
    layers.push_back(std::make_shared<ConvBN>(hidden, out, 1, 1, 1, false, seed * 8 + 3));
    body_ = register_cell("body", std::make_shared<nn::SequentialCell>(layers));
  }
  Tensor construct(const Tensor& x) override {
    Tensor y = (*body_)(x);
    return residual_ ? add(x, y) : y;
  }
  std::string name() const override { return "InvertedResidual"; }

 private:
  bool residual_;
  std::shared_ptr<nn::SequentialCell> body_;
};

inline int64_t make_divisible(double v, int64_t divisor = 8) {
  int64_t r = std::max<int64_t>(divisor, (int64_t)(v + divisor / 2.0) / divisor * divisor);
  if (r < 0.9 * v) r += divisor;
  return r;
}

class MobileNetV2 final : public nn::Cell {
 public:
  MobileNetV2(int64_t num_classes, double width, uint64_t seed) {
    const int64_t settings[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2},
                                    {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};  // t, c, n, s
    int64_t in = make_divisible(32 * width);
    const int64_t last = make_divisible(1280 * std::max(1.0, width));
    std::vector<nn::CellPtr> f;
    uint64_t k = seed * 1000;
    f.push_back(std::make_shared<ConvBN>(3, in, 3, 2, 1, true, ++k));
    for (const auto& s : settings) {
      const int64_t out = make_divisible(s[1] * width);
      for (int64_t i = 0; i < s[2]; ++i) {
        f.push_back(std::make_shared<InvertedResidual>(in, out, i == 0 ? s[3] : 1, s[0], ++k));
        in = out;
      }
    }
    f.push_back(std::make_shared<ConvBN>(in, last, 1, 1, 1, true, ++k));
    features_ = register_cell("features", std::make_shared<nn::SequentialCell>(f));
    classifier_ = register_cell("classifier", std::make_shared<nn::Dense>(last, num_classes, true, nullptr, ++k));
    last_ = last;
  }
  Tensor construct(const Tensor& x) override {
    Tensor y = adaptive_avg_pool2d((*features_)(x), {1, 1});
    return (*classifier_)(reshape(y, {-1, last_}));
  }
  std::string name() const override { return "MobileNetV2"; }

 private:
  int64_t last_ = 0;
  std::shared_ptr<nn::SequentialCell> features_;
  std::shared_ptr<nn::Dense> classifier_;
};

}  // namespace spore::onnx_models
