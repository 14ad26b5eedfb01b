// Conv2d (pad modes, stride, dilation, groups, depthwise), MaxPool2d, AvgPool2d, AdaptiveAvgPool2d.
#include <gtest/gtest.h>

#include "nn/nn_ref.h"
#include "spore/nn/layers.h"

namespace spore {
namespace {

using test::nnref::expect_error;
using test::nnref::layer_tol;
using test::nnref::values;

struct ConvCase {
  int64_t in, out, kh, kw;
  nn::Conv2dConfig cfg;
  int64_t H, W;
  std::vector<int64_t> pads;  // expected (top, bottom, left, right)
};

void check_conv(const ConvCase& c, DType t, const std::string& what) {
  nn::Conv2dConfig cfg = c.cfg;
  cfg.dtype = t;
  cfg.seed = 5;
  nn::Conv2d conv(c.in, c.out, {c.kh, c.kw}, cfg);
  EXPECT_EQ(conv.pads_for(c.H, c.W), c.pads) << what;
  auto xv = test::random_values(2 * c.in * c.H * c.W, t, -1, 1, 3);
  Tensor x = test::make_tensor(xv, {2, c.in, c.H, c.W}, t);
  test::nnref::Conv2dRef p;
  auto s = cfg.stride, d = cfg.dilation;
  p.sh = s[0], p.sw = s.size() > 1 ? s[1] : s[0], p.dh = d[0], p.dw = d.size() > 1 ? d[1] : d[0];
  p.pt = c.pads[0], p.pb = c.pads[1], p.pl = c.pads[2], p.pr = c.pads[3], p.groups = cfg.groups;
  std::vector<int64_t> oshape;
  auto ref = test::nnref::conv2d(xv, {2, c.in, c.H, c.W}, values(conv.weight().value()),
                                 {c.out, c.in / cfg.groups, c.kh, c.kw},
                                 cfg.has_bias ? values(conv.bias().value()) : std::vector<double>{}, p, oshape);
  Tensor y = conv(x);
  EXPECT_EQ(y.shape(), Shape(oshape)) << what;
  EXPECT_EQ(y.dtype(), t);
  test::expect_close(y, ref, layer_tol(t), what + " " + dtype_name(t));
}

TEST(NnConv2d, PadModesStridesDilationGroups) {
  std::vector<std::pair<std::string, ConvCase>> cases{
      {"same 3x3", {3, 4, 3, 3, {}, 5, 6, {1, 1, 1, 1}}},
      {"same stride 2 (uneven)", {2, 3, 3, 3, {.stride = {2}}, 6, 5, {0, 1, 1, 1}}},
      {"same 2x2 kernel", {2, 2, 2, 2, {.has_bias = true}, 4, 4, {0, 1, 0, 1}}},
      {"valid with bias", {3, 2, 3, 2, {.pad_mode = "valid", .has_bias = true}, 5, 5, {0, 0, 0, 0}}},
      {"pad 2 values, stride (2,1)", {2, 2, 3, 3, {.stride = {2, 1}, .pad_mode = "pad", .padding = {1, 2}}, 5, 4, {1, 1, 2, 2}}},
      {"pad 4 values", {2, 3, 3, 3, {.pad_mode = "pad", .padding = {0, 2, 1, 0}, .has_bias = true}, 4, 5, {0, 2, 1, 0}}},
      {"dilation 2 same", {2, 2, 3, 3, {.dilation = {2}}, 6, 6, {2, 2, 2, 2}}},
      {"groups 2", {4, 6, 3, 3, {.pad_mode = "valid", .groups = 2, .has_bias = true}, 5, 5, {0, 0, 0, 0}}},
      {"depthwise", {3, 3, 3, 3, {.groups = 3}, 4, 5, {1, 1, 1, 1}}},
      {"depthwise x2", {2, 4, 3, 3, {.stride = {2}, .groups = 2}, 5, 5, {1, 1, 1, 1}}},
  };
  for (auto& [what, c] : cases) check_conv(c, DType::kFloat32, what);
  for (DType t : {DType::kFloat16, DType::kBFloat16, DType::kFloat64}) check_conv(cases[1].second, t, cases[1].first);
}

TEST(NnConv2d, InitParametersAndErrors) {
  nn::Conv2d c(4, 8, {3}, {.groups = 2, .has_bias = true, .seed = 9});
  EXPECT_EQ(c.weight().value().shape(), Shape({8, 2, 3, 3}));
  const double bound = 1 / std::sqrt(2.0 * 9);
  for (double v : values(c.weight().value())) EXPECT_LE(std::abs(v), bound);
  for (double v : values(c.bias().value())) EXPECT_LE(std::abs(v), bound);
  std::vector<std::string> names;
  for (auto& [n, p] : c.named_parameters()) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"weight", "bias"}));
  EXPECT_FALSE(nn::Conv2d(1, 1, {3}).bias().defined());  // MindSpore default: no bias
  expect_error([] { nn::Conv2d(3, 4, {3}, {.groups = 2}); }, ErrorCode::kValue, "divisible by groups");
  expect_error([] { nn::Conv2d(3, 4, {3}, {.pad_mode = "full"}); }, ErrorCode::kValue, "full");
  expect_error([] { nn::Conv2d(3, 4, {3}, {.padding = {1}}); }, ErrorCode::kValue, "pad_mode");
  expect_error([] { nn::Conv2d(3, 4, {3}, {.pad_mode = "pad", .padding = {1, 2, 3}}); }, ErrorCode::kValue, "4");
  expect_error([] { nn::Conv2d(3, 4, {3, 3, 3}); }, ErrorCode::kValue, "kernel_size");
  nn::Conv2d ok(3, 4, {3});
  expect_error([&] { ok(zeros({1, 2, 5, 5})); }, ErrorCode::kShape, "in_channels = 3");
  expect_error([&] { ok(zeros({3, 5, 5})); }, ErrorCode::kShape, "Conv2d");
}

TEST(NnPool, MaxAvgAdaptive) {
  for (DType t : {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64}) {
    const std::vector<int64_t> xs{2, 3, 7, 6};
    auto xv = test::random_values(2 * 3 * 7 * 6, t, -2, 2, 4);
    Tensor x = test::make_tensor(xv, xs, t);
    std::vector<int64_t> os;
    auto ref = test::nnref::pool2d(xv, xs, 2, 2, 2, 2, 0, 0, true, false, os);
    Tensor y = nn::MaxPool2d({2})(x);
    EXPECT_EQ(y.shape(), Shape(os));
    test::expect_close(y, ref, {0, 0}, std::string("MaxPool2d ") + dtype_name(t));
    ref = test::nnref::pool2d(xv, xs, 3, 2, 2, 1, 1, 1, true, true, os);
    y = nn::MaxPool2d({3, 2}, {2, 1}, {1}, true)(x);
    EXPECT_EQ(y.shape(), Shape(os));
    test::expect_close(y, ref, {0, 0}, "MaxPool2d padded ceil");
    ref = test::nnref::pool2d(xv, xs, 3, 3, 2, 2, 1, 1, false, false, os);
    y = nn::AvgPool2d({3}, {2}, {1})(x);
    EXPECT_EQ(y.shape(), Shape(os));
    test::expect_close(y, ref, layer_tol(t), "AvgPool2d padded");
    y = nn::AdaptiveAvgPool2d({3, 4})(x);
    EXPECT_EQ(y.shape(), Shape({2, 3, 3, 4}));
    test::expect_close(y, test::nnref::adaptive_avg(xv, xs, 3, 4), layer_tol(t), "AdaptiveAvgPool2d");
    test::expect_close(nn::AdaptiveAvgPool2d({1})(x), test::nnref::adaptive_avg(xv, xs, 1, 1), layer_tol(t), "global");
  }
  expect_error([] { nn::MaxPool2d({2}, {}, {2}); }, ErrorCode::kValue, "half of kernel_size");
  expect_error([] { nn::AvgPool2d({0}); }, ErrorCode::kValue, "AvgPool2d");
  expect_error([] { nn::MaxPool2d({2})(zeros({3, 4, 4})); }, ErrorCode::kShape, "MaxPool2d");
}

// Gradients of the conv and pooling layers in float64 by central differences.
TEST(NnGradConv, Conv2dAndPools) {
  const DType f64 = DType::kFloat64;
  auto rnd = [&](std::vector<int64_t> s, uint32_t seed) {
    int64_t n = 1;
    for (auto d : s) n *= d;
    return test::make_tensor(test::random_values(n, f64, -1, 1, seed), s, f64);
  };
  {
    nn::Conv2d same(2, 3, {3}, {.stride = {2}, .has_bias = true, .seed = 1, .dtype = f64});
    test::nnref::gradcheck_cell(same, rnd({1, 2, 5, 4}, 1), "Conv2d same stride 2");
    nn::Conv2d dw(2, 4, {2, 3}, {.pad_mode = "pad", .padding = {1, 0, 2, 1}, .dilation = {1, 2}, .groups = 2,
                                 .seed = 2, .dtype = f64});
    test::nnref::gradcheck_cell(dw, rnd({2, 2, 4, 5}, 2), "Conv2d grouped asymmetric pad");
    nn::MaxPool2d mp({2}, {1});
    test::nnref::gradcheck_cell(mp, rnd({1, 2, 4, 4}, 3), "MaxPool2d");
    nn::AvgPool2d ap({3}, {2}, {1});
    test::nnref::gradcheck_cell(ap, rnd({1, 2, 5, 5}, 4), "AvgPool2d");
    nn::AdaptiveAvgPool2d aap({2, 3});
    test::nnref::gradcheck_cell(aap, rnd({1, 2, 5, 7}, 5), "AdaptiveAvgPool2d");
  }
}

}  // namespace
}  // namespace spore
