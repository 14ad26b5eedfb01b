#include "spore/nn/conv.h"

#include <algorithm>
#include <cmath>

#include "nn_util.h"
#include "spore/nn/init.h"
#include "spore/ops.h"

namespace spore::nn {

namespace {

// Zeros added before/after one axis with concat: conv2d pads symmetrically, so the uneven part
// of a "same" or explicit 4-value padding goes through here (concat's rule carries the gradient).
Tensor pad_axis(const Tensor& x, int axis, int64_t before, int64_t after) {
  if (before == 0 && after == 0) return x;
  std::vector<Tensor> parts;
  std::vector<int64_t> s = x.shape().to_vector();
  if (before > 0) {
    s[axis] = before;
    parts.push_back(zeros(s, x.dtype()));
  }
  parts.push_back(x);
  if (after > 0) {
    s[axis] = after;
    parts.push_back(zeros(s, x.dtype()));
  }
  return concat(parts, axis);
}

void check_nchw(const std::string& cell, const Tensor& x) {
  detail::check_floating_input(cell, x);
  if (x.ndim() != 4)
    throw Error(ErrorCode::kShape, cell + ": input shape " + x.shape().str() +
                                       " is not 4-D [N, C, H, W]; add a batch axis with unsqueeze(x, 0)");
}

}  // namespace

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, std::vector<int64_t> kernel_size, Conv2dConfig config)
    : in_(in_channels), out_(out_channels), config_(std::move(config)) {
  const std::string n = "Conv2d";
  detail::check_positive(n, "in_channels", in_channels);
  detail::check_positive(n, "out_channels", out_channels);
  detail::check_positive(n, "groups", config_.groups);
  detail::check_floating_dtype(n, config_.dtype);
  if (in_channels % config_.groups || out_channels % config_.groups)
    throw Error(ErrorCode::kValue, n + ": in_channels " + std::to_string(in_channels) + " and out_channels " +
                                       std::to_string(out_channels) + " must both be divisible by groups " +
                                       std::to_string(config_.groups));
  auto k = detail::pair_arg(n, "kernel_size", kernel_size, 1);
  auto s = detail::pair_arg(n, "stride", config_.stride, 1);
  auto d = detail::pair_arg(n, "dilation", config_.dilation, 1);
  for (int i = 0; i < 2; ++i) kernel_[i] = k[i], stride_[i] = s[i], dilation_[i] = d[i];

  const auto& p = config_.padding;
  const bool zero_pad = std::all_of(p.begin(), p.end(), [](int64_t v) { return v == 0; });
  if (config_.pad_mode == "pad") {
    if (p.size() == 1) pad_ = {p[0], p[0], p[0], p[0]};
    else if (p.size() == 2) pad_ = {p[0], p[0], p[1], p[1]};
    else if (p.size() == 4) pad_ = p;
    else
      throw Error(ErrorCode::kValue, n + ": padding takes 1, 2 (height, width) or 4 (top, bottom, left, right) "
                                         "values, got " + detail::list_str(p));
    for (int64_t v : pad_)
      if (v < 0) throw Error(ErrorCode::kValue, n + ": padding " + detail::list_str(p) + " must be >= 0");
  } else if (config_.pad_mode == "same" || config_.pad_mode == "valid") {
    if (!zero_pad)
      throw Error(ErrorCode::kValue, n + ": padding " + detail::list_str(p) + " is only used with pad_mode "
                                         "\"pad\", but pad_mode is \"" + config_.pad_mode + "\"");
  } else {
    throw Error(ErrorCode::kValue, n + ": pad_mode \"" + config_.pad_mode +
                                       "\" is not one of \"same\", \"valid\", \"pad\"");
  }

  const std::vector<int64_t> wshape{out_channels, in_channels / config_.groups, kernel_[0], kernel_[1]};
  // PyTorch's nn.Conv2d default: kaiming_uniform(a = sqrt(5)) gives bound 1/sqrt(fan_in).
  weight_ = register_parameter("weight", init::he_uniform(wshape, init::derive_seed(config_.seed, 0), std::sqrt(5.0),
                                                          "fan_in", "leaky_relu", config_.dtype));
  if (config_.has_bias) {
    const double bound = 1.0 / std::sqrt((double)init::fan_in_and_fan_out(wshape).first);
    bias_ = register_parameter(
        "bias", init::uniform({out_channels}, init::derive_seed(config_.seed, 1), -bound, bound, config_.dtype));
  }
}

std::vector<int64_t> Conv2d::pads_for(int64_t h, int64_t w) const {
  if (config_.pad_mode == "pad") return pad_;
  if (config_.pad_mode == "valid") return {0, 0, 0, 0};
  std::vector<int64_t> out(4);
  const int64_t extent[2] = {h, w};
  for (int i = 0; i < 2; ++i) {
    const int64_t o = (extent[i] + stride_[i] - 1) / stride_[i];
    const int64_t need = (o - 1) * stride_[i] + (kernel_[i] - 1) * dilation_[i] + 1 - extent[i];
    const int64_t total = std::max<int64_t>(need, 0);
    out[2 * i] = total / 2;
    out[2 * i + 1] = total - total / 2;
  }
  return out;
}

Tensor Conv2d::construct(const Tensor& x) {
  check_nchw("Conv2d", x);
  if (x.shape()[1] != in_)
    throw Error(ErrorCode::kShape, "Conv2d: input shape " + x.shape().str() + " has " +
                                       std::to_string(x.shape()[1]) + " channels, the layer expects in_channels = " +
                                       std::to_string(in_));
  const auto pads = pads_for(x.shape()[2], x.shape()[3]);
  // The symmetric part goes to conv2d; any excess on one side is padded explicitly.
  const int64_t sym_h = std::min(pads[0], pads[1]), sym_w = std::min(pads[2], pads[3]);
  Tensor in = pad_axis(x, 2, pads[0] - sym_h, pads[1] - sym_h);
  in = pad_axis(in, 3, pads[2] - sym_w, pads[3] - sym_w);
  Conv2dOptions opt;
  opt.stride = {stride_[0], stride_[1]};
  opt.padding = {sym_h, sym_w};
  opt.dilation = {dilation_[0], dilation_[1]};
  opt.groups = config_.groups;
  Tensor y = conv2d(in, param(weight_), opt);
  if (bias_.defined()) y = add(y, reshape(param(bias_), {1, out_, 1, 1}));
  return y;
}

namespace {

Pool2dOptions pool_options(const std::string& cell, const std::vector<int64_t>& kernel,
                           const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, bool ceil_mode) {
  Pool2dOptions o;
  o.kernel = detail::pair_arg(cell, "kernel_size", kernel, 1);
  o.stride = stride.empty() ? o.kernel : detail::pair_arg(cell, "stride", stride, 1);
  o.padding = detail::pair_arg(cell, "padding", padding, 0);
  for (int i = 0; i < 2; ++i)
    if (2 * o.padding[i] > o.kernel[i])
      throw Error(ErrorCode::kValue, cell + ": padding " + detail::list_str(padding) +
                                         " must be at most half of kernel_size " + detail::list_str(kernel));
  o.ceil_mode = ceil_mode;
  return o;
}

}  // namespace

MaxPool2d::MaxPool2d(std::vector<int64_t> kernel_size, std::vector<int64_t> stride, std::vector<int64_t> padding,
                     bool ceil_mode)
    : kernel_(std::move(kernel_size)), stride_(std::move(stride)), padding_(std::move(padding)), ceil_mode_(ceil_mode) {
  pool_options("MaxPool2d", kernel_, stride_, padding_, ceil_mode_);  // validate now, not at the first call
}

Tensor MaxPool2d::construct(const Tensor& x) {
  check_nchw("MaxPool2d", x);
  return max_pool2d(x, pool_options("MaxPool2d", kernel_, stride_, padding_, ceil_mode_));
}

AvgPool2d::AvgPool2d(std::vector<int64_t> kernel_size, std::vector<int64_t> stride, std::vector<int64_t> padding,
                     bool ceil_mode)
    : kernel_(std::move(kernel_size)), stride_(std::move(stride)), padding_(std::move(padding)), ceil_mode_(ceil_mode) {
  pool_options("AvgPool2d", kernel_, stride_, padding_, ceil_mode_);
}

Tensor AvgPool2d::construct(const Tensor& x) {
  check_nchw("AvgPool2d", x);
  return avg_pool2d(x, pool_options("AvgPool2d", kernel_, stride_, padding_, ceil_mode_));
}

AdaptiveAvgPool2d::AdaptiveAvgPool2d(std::vector<int64_t> output_size)
    : output_size_(detail::pair_arg("AdaptiveAvgPool2d", "output_size", output_size, 1)) {}

Tensor AdaptiveAvgPool2d::construct(const Tensor& x) {
  check_nchw("AdaptiveAvgPool2d", x);
  return adaptive_avg_pool2d(x, output_size_);
}

}  // namespace spore::nn
