// The inference passes (NOTE [Inference passes]): BatchNorm and bias folded into fused_conv2d with
// the activation's clamp, GELU's erf formula made gelu, fused groups after a convolution expanded
// for it, and constant folding with Lite's size and view rules; jit runs them on a frozen trace.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "graph_eval.h"
#include "spore/jit.h"
#include "spore/nn/activation.h"
#include "spore/nn/conv.h"
#include "spore/nn/normalization.h"
#include "spore/ops.h"
#include "test_util.h"

namespace spore::graph {
namespace {
using test::Builder;

using spore::test::max_magnitude;
double largest_difference(const Tensor& a, const Tensor& b) { return spore::test::max_abs_difference(a, b); }

int count_ops(const Graph& g, OpId op) {
  int c = 0;
  for (const Node& n : g.nodes()) c += n.op() == op;
  return c;
}

// conv (3 -> 8 channels, 3x3, padding 1) + an inference-mode BatchNorm as nn::BatchNorm2d writes
// it (sub mean, mul rsqrt(var + eps), mul gamma, add beta) + relu; the tensors are made outside
// the function, so a trace captures them.
struct ConvBnRelu {
  Tensor w = random_uniform({8, 3, 3, 3}, 1, -0.5, 0.5), mean = random_uniform({8}, 2, -0.3, 0.3),
         var = random_uniform({8}, 3, 0.5, 1.5), gamma = random_uniform({8}, 4, 0.5, 1.5), beta = random_uniform({8}, 5, -0.2, 0.2);
  Tensor operator()(const Tensor& x) const {
    Conv2dOptions o;
    o.padding = {1, 1};
    auto ch = [](const Tensor& t) { return reshape(t, {1, -1, 1, 1}); };
    const Tensor y = mul(sub(conv2d(x, w, o), ch(mean)), rsqrt(add(ch(var), 1e-5)));
    return relu(add(mul(y, ch(gamma)), ch(beta)));
  }
};

TEST(InferencePasses, JitFreezeFoldsBatchNormAndReluIntoTheConvolution) {
  const ConvBnRelu net;
  const Tensor x = random_uniform({2, 3, 9, 7}, 6, -1, 1), x2 = random_uniform({2, 3, 9, 7}, 7, -1, 1);
  JitOptions o;
  o.freeze = true;
  JitFunction f = jit(TensorFn([&](const std::vector<Tensor>& in) { return net(in[0]); }), o);
  f.call1({x});  // the first call traces (an eager run); the second runs the compiled graph
  const Tensor got = f.call1({x2});
  ASSERT_NE(f.last_graph(), nullptr);
  EXPECT_EQ(count_ops(*f.last_graph(), OpId::k_fused_conv2d), 1);
  EXPECT_EQ(f.last_graph()->num_nodes(), 1u) << "conv, the BatchNorm's four ops and relu are one node";
  // Eager, and float64 as the independent reference: folding rounds scale * weight once more.
  const Tensor eager = net(x2);
  EXPECT_LE(largest_difference(got, eager), 1e-5 * max_magnitude(eager));
  ConvBnRelu wide = net;
  for (Tensor* t : {&wide.w, &wide.mean, &wide.var, &wide.gamma, &wide.beta}) *t = t->to(DType::kFloat64);
  const Tensor ref = wide(x2.to(DType::kFloat64));
  EXPECT_LE(largest_difference(got, ref), 1e-5 * max_magnitude(ref));
  EXPECT_GT(max_magnitude(ref), 0.5);
}

TEST(InferencePasses, AFrozenJitOfAnEvalModeConvBatchNormReluCellIsOneFusedConvolution) {
  // The nn layers themselves (jit(Cell&), src/nn/cell_jit.cc), with trained-looking statistics.
  nn::Conv2dConfig cfg;
  cfg.seed = 3;
  auto bn = std::make_shared<nn::BatchNorm2d>(6);
  bn->moving_mean().set_value(random_uniform({6}, 40, -0.5, 0.5));
  bn->moving_variance().set_value(random_uniform({6}, 41, 0.5, 2.0));
  bn->gamma().set_value(random_uniform({6}, 42, 0.5, 1.5));
  bn->beta().set_value(random_uniform({6}, 43, -0.3, 0.3));
  nn::SequentialCell net({std::make_shared<nn::Conv2d>(3, 6, std::vector<int64_t>{3, 3}, cfg), bn, std::make_shared<nn::ReLU>()});
  net.set_train(false);
  JitOptions o;
  o.freeze = true;
  JitFunction f = jit(net, o);
  const Tensor x = random_uniform({1, 3, 8, 10}, 44, -1, 1);
  f.call1({x});
  const Tensor got = f.call1({x});
  EXPECT_EQ(count_ops(*f.last_graph(), OpId::k_fused_conv2d), 1);
  EXPECT_EQ(f.last_graph()->num_nodes(), 1u);
  const Tensor eager = net(x);
  EXPECT_LE(largest_difference(got, eager), 1e-5 * max_magnitude(eager));
}

TEST(InferencePasses, WithoutFreezeTheWeightsStayLiveAndUnfused) {
  // Captured parameters change between calls (an optimizer's step): jit must not fold them.
  ConvBnRelu net;
  const Tensor x = random_uniform({1, 3, 5, 5}, 8, -1, 1);
  JitFunction f = jit(TensorFn([&](const std::vector<Tensor>& in) { return net(in[0]); }));
  f.call1({x});
  f.call1({x});
  EXPECT_EQ(count_ops(*f.last_graph(), OpId::k_fused_conv2d), 0);
  EXPECT_EQ(count_ops(*f.last_graph(), OpId::k_conv2d), 1);
  net.w.copy_(mul(net.w, 2.0));
  EXPECT_EQ(test::bytes(f.call1({x})), test::bytes(net(x)));
}

TEST(InferencePasses, ConvFusionTakesBiasAndClipAndStopsAtASharedValue) {
  // conv + per-channel bias + Clip(0, 6) (maximum then minimum by scalars), then a value read
  // twice: the clamp is absorbed, the two readers stay.
  Builder b;
  const ValueId x = b.input(random_uniform({1, 2, 6, 6}, 9, -1, 1));
  const ValueId w = b.constant(random_uniform({4, 2, 3, 3}, 10, -1, 1));
  const ValueId bias = b.constant(random_uniform({1, 4, 1, 1}, 11, -1, 1));
  const ValueId c = b.node(OpId::k_conv2d, {x, w},
                           Attrs::of(std::vector<int64_t>{1, 1}, std::vector<int64_t>{1, 1}, std::vector<int64_t>{1, 1}, int64_t{1}));
  const ValueId y = b.node(OpId::k_add, {c, bias});
  const ValueId lo = b.node(OpId::k_maximum, {y, b.constant(Tensor::scalar(0.0f))});
  const ValueId hi = b.node(OpId::k_minimum, {lo, b.constant(Tensor::scalar(0.5f))});
  const ValueId s1 = b.node(OpId::k_mul, {hi, hi});
  const ValueId s2 = b.node(OpId::k_neg, {hi});
  b.outputs({s1, s2});
  const auto before = b.run();
  const PassStats s = fuse_convolutions(b.g);
  b.g.validate();
  EXPECT_EQ(s.ops_fused, 3);
  EXPECT_EQ(b.ops(), (std::vector<OpId>{OpId::k_fused_conv2d, OpId::k_mul, OpId::k_neg}));
  const auto after = b.run();
  for (size_t i = 0; i < 2; ++i) EXPECT_LE(largest_difference(after[i], before[i]), 1e-6);
}

TEST(InferencePasses, ConvFusionLeavesNonConstantWeightsAndFloat64Alone) {
  Builder b;
  const ValueId x = b.input(random_uniform({1, 2, 4, 4}, 12, -1, 1));
  const ValueId w = b.input(random_uniform({3, 2, 1, 1}, 13, -1, 1));
  const ValueId x64 = b.input(random_uniform({1, 2, 4, 4}, 14, -1, 1).to(DType::kFloat64));
  const ValueId w64 = b.constant(random_uniform({3, 2, 1, 1}, 15, -1, 1).to(DType::kFloat64));
  const Attrs a = Attrs::of(std::vector<int64_t>{1, 1}, std::vector<int64_t>{0, 0}, std::vector<int64_t>{1, 1}, int64_t{1});
  b.outputs({b.node(OpId::k_relu, {b.node(OpId::k_conv2d, {x, w}, a)}), b.node(OpId::k_relu, {b.node(OpId::k_conv2d, {x64, w64}, a)})});
  EXPECT_EQ(fuse_convolutions(b.g).ops_fused, 0);
  EXPECT_EQ(b.count(OpId::k_fused_conv2d), 0);
}

TEST(InferencePasses, GeluFormulaBecomesGelu) {
  // torch's grouping: (f * 0.5) * (1 + erf(f / sqrt 2)).
  Builder b;
  const ValueId f = b.input(random_normal({4, 33}, 16));
  const ValueId d = b.node(OpId::k_div, {f, b.constant(Tensor::scalar((float)std::sqrt(2.0)))});
  const ValueId a = b.node(OpId::k_add, {b.node(OpId::k_erf, {d}), b.constant(Tensor::scalar(1.0f))});
  const ValueId y = b.node(OpId::k_mul, {b.node(OpId::k_mul, {f, b.constant(Tensor::scalar(0.5f))}), a});
  b.outputs({y});
  const Tensor want = gelu(b.inputs[0]);
  EXPECT_EQ(substitute_gelu(b.g).ops_fused, 1);
  b.g.validate();
  EXPECT_EQ(b.ops(), std::vector<OpId>{OpId::k_gelu});
  EXPECT_EQ(test::bytes(b.run()[0]), test::bytes(want));
}

TEST(InferencePasses, GeluFormulaWithAnIntermediateReadTwiceStays) {
  Builder b;
  const ValueId f = b.input(random_normal({8}, 17));
  const ValueId e = b.node(OpId::k_erf, {b.node(OpId::k_mul, {f, b.constant(Tensor::scalar((float)(1 / std::sqrt(2.0))))})});
  const ValueId a = b.node(OpId::k_add, {e, b.constant(Tensor::scalar(1.0f))});
  const ValueId y = b.node(OpId::k_mul, {f, b.node(OpId::k_mul, {b.constant(Tensor::scalar(0.5f)), a})});
  b.outputs({y, e});  // erf's result is also returned
  EXPECT_EQ(substitute_gelu(b.g).ops_fused, 0);
  EXPECT_EQ(b.count(OpId::k_gelu), 0);
}

TEST(InferencePasses, FusedGroupsAfterAConvolutionAreExpandedAndFused) {
  // A graph fused before it reached the inference passes (jit's pipeline, then an export): the
  // fused bias + relu group is put back as ops, and the convolution absorbs them.
  Builder b;
  const ValueId x = b.input(random_uniform({1, 3, 16, 16}, 18, -1, 1));
  const ValueId w = b.constant(random_uniform({8, 3, 3, 3}, 19, -1, 1));
  const ValueId bias = b.constant(random_uniform({1, 8, 1, 1}, 20, -1, 1));
  const Attrs a = Attrs::of(std::vector<int64_t>{1, 1}, std::vector<int64_t>{1, 1}, std::vector<int64_t>{1, 1}, int64_t{1});
  b.outputs({b.node(OpId::k_relu, {b.node(OpId::k_add, {b.node(OpId::k_conv2d, {x, w}, a), bias})})});
  const auto before = b.run();
  fuse_elementwise(b.g, 0);
  ASSERT_EQ(b.count(OpId::k_fused_elementwise), 1);
  EXPECT_EQ(expand_fused_after_convolutions(b.g).ops_fused, 1);
  b.g.validate();
  EXPECT_EQ(b.ops(), (std::vector<OpId>{OpId::k_conv2d, OpId::k_add, OpId::k_relu}));
  PassOptions o;
  o.inference = true;
  run_passes(b.g, o);
  EXPECT_EQ(b.ops(), std::vector<OpId>{OpId::k_fused_conv2d});
  EXPECT_LE(largest_difference(b.run()[0], before[0]), 1e-5 * max_magnitude(before[0]));
}

// conv2d (constant weight) + a per-channel bias, the start of every epilogue test below.
ValueId conv_with_bias(Builder& b, ValueId x, uint64_t seed) {
  const ValueId w = b.constant(random_uniform({6, 3, 3, 3}, seed, -0.5, 0.5));
  const ValueId bias = b.constant(random_uniform({1, 6, 1, 1}, seed + 1, -1, 1));
  const Attrs a = Attrs::of(std::vector<int64_t>{1, 1}, std::vector<int64_t>{1, 1}, std::vector<int64_t>{1, 1}, int64_t{1});
  return b.node(OpId::k_add, {b.node(OpId::k_conv2d, {x, w}, a), bias});
}

TEST(InferencePasses, ConvolutionTailsBecomeEpiloguesBitForBit) {
  // SiLU (x * sigmoid(x)), hard-swish (x * clip(x / 6 + 0.5, 0, 1), as the ONNX importer writes
  // it) and a lone tanh after three convolutions: each convolution absorbs its tail as its
  // epilogue (NOTE [Convolution epilogues]), and the results equal, bit for bit, the pipeline
  // without that last pass (the same kernels' loops), and float64 within float32 rounding.
  Builder b;
  const ValueId x = b.input(random_uniform({1, 3, 12, 12}, 50, -1, 1));
  const ValueId c1 = conv_with_bias(b, x, 51), c2 = conv_with_bias(b, x, 53), c3 = conv_with_bias(b, x, 55);
  const ValueId silu = b.node(OpId::k_mul, {c1, b.node(OpId::k_sigmoid, {c1})});
  const ValueId h = b.node(OpId::k_add, {b.node(OpId::k_mul, {c2, b.constant(Tensor::scalar(1.0f / 6))}), b.constant(Tensor::scalar(0.5f))});
  const ValueId clip = b.node(OpId::k_minimum, {b.node(OpId::k_maximum, {h, b.constant(Tensor::scalar(0.0f))}), b.constant(Tensor::scalar(1.0f))});
  const ValueId hswish = b.node(OpId::k_mul, {c2, clip});
  b.outputs({silu, hswish, b.node(OpId::k_tanh, {c3})});
  const auto eager = b.run();

  Graph without = b.g;
  fuse_convolutions(without);
  fuse_elementwise(without, 0);
  eliminate_dead_code(without);
  EXPECT_EQ(count_ops(without, OpId::k_fused_elementwise), 2);

  PassOptions o;
  o.inference = true;
  o.min_fusion_elements = 0;
  const std::vector<PassStats> stats = run_passes(b.g, o);
  EXPECT_EQ(b.ops(), (std::vector<OpId>{OpId::k_fused_conv2d, OpId::k_fused_conv2d, OpId::k_fused_conv2d}));
  for (const Node& n : b.g.nodes()) EXPECT_FALSE(n.attrs.s(6).empty());
  EXPECT_EQ(stats.back().pass, "dce");
  const auto got = b.run(), want = b.run(without);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(test::bytes(got[i]), test::bytes(want[i])) << "output " << i;
    EXPECT_LE(largest_difference(got[i], eager[i]), 1e-5 * max_magnitude(eager[i])) << "output " << i;
  }
}

TEST(InferencePasses, ConvolutionTailsThatReadMoreStaySeparate) {
  // A tail that reads another tensor (a residual add), one whose convolution output is read
  // twice, and one ending in float64 stay as they were.
  Builder b;
  const ValueId x = b.input(random_uniform({1, 3, 8, 8}, 60, -1, 1));
  const ValueId r = b.input(random_uniform({1, 6, 8, 8}, 61, -1, 1));
  const ValueId c1 = conv_with_bias(b, x, 62), c2 = conv_with_bias(b, x, 64), c3 = conv_with_bias(b, x, 66);
  const ValueId res = b.node(OpId::k_relu, {b.node(OpId::k_add, {c1, r})});
  const ValueId twice = b.node(OpId::k_sigmoid, {c2});
  const ValueId wide = b.node(OpId::k_cast, {c3}, Attrs::of(DType::kFloat64));
  b.outputs({res, twice, c2, wide});
  const auto before = b.run();
  PassOptions o;
  o.inference = true;
  o.min_fusion_elements = 0;
  run_passes(b.g, o);
  for (const Node& n : b.g.nodes())
    if (n.op() == OpId::k_fused_conv2d) EXPECT_TRUE(n.attrs.s(6).empty());
  const auto after = b.run();
  EXPECT_EQ(b.count(OpId::k_fused_conv2d), 3);
  for (size_t i = 0; i < before.size(); ++i)  // the bias folded into the convolution: a rounding apart
    EXPECT_LE(largest_difference(after[i], before[i]), 1e-5 * max_magnitude(before[i])) << "output " << i;
}

TEST(InferencePasses, FoldingHonoursTheCallersSizeAndViewRules) {
  // 2 MiB: over jit's bound, under Lite's 64 MiB.
  Builder b;
  const ValueId big = b.node(OpId::k_fill, {}, test::fill_attrs({1024, 512}, 1.0));
  const ValueId t = b.node(OpId::k_permute, {b.constant(random_uniform({3, 5}, 21))}, Attrs::of(std::vector<int64_t>{1, 0}));
  b.outputs({big, t});
  Graph jit_graph = b.g;
  EXPECT_EQ(fold_constants(jit_graph).nodes_removed, 1);
  EXPECT_TRUE(jit_graph.value(jit_graph.graph_outputs()[1]).tensor.is_contiguous()) << "jit copies a folded view";
  EXPECT_EQ(fold_constants(b.g, int64_t{64} << 20, /*copy_views=*/false).nodes_removed, 2);
  EXPECT_FALSE(b.g.value(b.g.graph_outputs()[1]).tensor.is_contiguous()) << "Lite keeps the view's strides";
}


TEST(InferencePasses, SubnormalFloat32ConstantsAreFlushedToSignedZeros) {
  // A weight as a trained model can hold (PP-OCRv6's 1x1 convolutions: 185,260 of 294,912 values
  // under FLT_MIN), a normal weight, and a float64 one.
  std::vector<float> w = random_uniform({6, 8}, 22, -1, 1).to_vector<float>();
  const float tiny = std::numeric_limits<float>::min();
  w[3] = tiny / 4, w[10] = -tiny / 1024, w[17] = tiny;  // two subnormals and the smallest normal
  std::vector<double> w64(48, 1e-310);                    // subnormal in float64: not flushed
  Builder b;
  const ValueId x = b.input(random_uniform({5, 6}, 23, -1, 1));
  const ValueId wv = b.constant(Tensor::from_vector(w, Shape{6, 8}), "w");
  const ValueId normal = b.constant(random_uniform({5, 8}, 24, -1, 1));
  const ValueId x64 = b.input(random_uniform({5, 6}, 25, -1, 1).to(DType::kFloat64));
  const ValueId y = b.node(OpId::k_add, {b.node(OpId::k_matmul, {x, wv}), normal});
  const ValueId y64 = b.node(OpId::k_matmul, {x64, b.constant(Tensor::from_vector(w64, Shape{6, 8}))});
  b.outputs({y, y64, wv});
  const PassStats s = flush_subnormal_constants(b.g);
  b.g.validate();
  EXPECT_EQ(s.constants_changed, 1);
  // The graph now reads (and returns) a copy with signed zeros in the subnormals' places and
  // every other value as it was; the normal constant is the same value as before.
  const ValueId flushed = b.g.graph_outputs()[2];
  ASSERT_NE(flushed, wv);
  EXPECT_EQ(b.g.value(flushed).name, "w");
  std::vector<float> want = w;
  want[3] = 0.0f, want[10] = -0.0f;
  EXPECT_EQ(test::bytes(b.g.value(flushed).tensor), test::bytes(Tensor::from_vector(want, Shape{6, 8})));
  EXPECT_TRUE(std::signbit(b.g.value(flushed).tensor.to_vector<float>()[10]));
  EXPECT_EQ(b.g.inputs(b.g.node(1))[1], normal);
  // The product equals eager's over the flushed weight, bit for bit.
  const std::vector<Tensor> got = b.run();
  EXPECT_EQ(test::bytes(got[0]), test::bytes(add(matmul(b.inputs[0], Tensor::from_vector(want, Shape{6, 8})),
                                                  b.g.value(normal).tensor)));
  // run_passes with `inference` runs it; without, weights are left as they are.
  Builder c;
  const ValueId cx = c.input(random_uniform({5, 6}, 26, -1, 1));
  c.outputs({c.node(OpId::k_matmul, {cx, c.constant(Tensor::from_vector(w, Shape{6, 8}))})});
  Graph plain = c.g;
  run_passes(plain);
  EXPECT_EQ(test::bytes(c.run(plain)[0]), test::bytes(matmul(c.inputs[0], Tensor::from_vector(w, Shape{6, 8}))));
  PassOptions o;
  o.inference = true;
  const std::vector<PassStats> stats = run_passes(c.g, o);
  EXPECT_TRUE(std::any_of(stats.begin(), stats.end(), [](const PassStats& p) { return p.pass == "subnormal" && p.constants_changed == 1; }));
}

TEST(InferencePasses, LargeMatmulWeightsGetAPaddedRowPitch) {
  // NOTE [Weight pitch]: a 300 x 256 row-major weight (76,800 elements) and a transposed view of
  // that size are copied into rows of 272 floats and read through a view; a small one is left alone.
  const Tensor big = random_uniform({300, 256}, 31, -1, 1);
  const Tensor small = random_uniform({16, 64}, 32, -1, 1);
  const Tensor wide_t = permute(random_uniform({256, 300}, 33, -1, 1), {1, 0});
  Builder b;
  const ValueId x = b.input(random_uniform({7, 300}, 34, -1, 1));
  const ValueId xs = b.input(random_uniform({5, 16}, 35, -1, 1));
  const ValueId bigv = b.constant(big, "w_big");
  const ValueId y = b.node(OpId::k_matmul, {x, bigv});
  const ValueId ys = b.node(OpId::k_matmul, {xs, b.constant(small)});
  const ValueId yt = b.node(OpId::k_matmul, {x, b.constant(wide_t)});
  const ValueId y2 = b.node(OpId::k_matmul, {b.input(random_uniform({3, 300}, 36, -1, 1)), bigv});  // shares w_big
  b.outputs({y, ys, yt, y2});
  const PassStats s = pad_matmul_weight_pitch(b.g);
  b.g.validate();
  EXPECT_EQ(s.constants_changed, 2);
  const ValueId padded = b.g.inputs(b.g.node(0))[1];
  ASSERT_NE(padded, bigv);
  EXPECT_EQ(b.g.value(padded).name, "w_big");
  const Tensor& pw = b.g.value(padded).tensor;
  EXPECT_EQ(pw.shape(), (Shape{300, 256}));
  EXPECT_EQ(pw.strides(), (Shape{272, 1}));
  EXPECT_EQ(test::bytes(pw.contiguous()), test::bytes(big));
  EXPECT_EQ(b.g.value(b.g.inputs(b.g.node(1))[1]).tensor.strides(), (Shape{64, 1}));
  const Tensor& pt = b.g.value(b.g.inputs(b.g.node(2))[1]).tensor;
  EXPECT_EQ(pt.strides(), (Shape{272, 1}));
  EXPECT_EQ(test::bytes(pt.contiguous()), test::bytes(wide_t.contiguous()));
  EXPECT_EQ(pad_matmul_weight_pitch(b.g).constants_changed, 0) << "a padded weight is not padded again";
  EXPECT_EQ(b.g.inputs(b.g.node(3))[1], padded) << "both readers of the shared weight read the one padded copy";
  // The product over the padded rows against float64.
  const std::vector<Tensor> got = b.run();
  const std::vector<double> xv = b.inputs[0].to_vector<double>(), wv = big.to_vector<double>();
  std::vector<double> ref(7 * 256, 0.0);
  for (int i = 0; i < 7; ++i)
    for (int j = 0; j < 256; ++j)
      for (int q = 0; q < 300; ++q) ref[(size_t)(i * 256 + j)] += xv[(size_t)(i * 300 + q)] * wv[(size_t)(q * 256 + j)];
  spore::test::expect_close(got[0], ref, spore::test::Tol{1e-5, 1e-5}, "matmul over the padded weight");
  const std::vector<double> tv = wide_t.contiguous().to_vector<double>();
  std::vector<double> ref_t(7 * 256, 0.0);
  for (int i = 0; i < 7; ++i)
    for (int j = 0; j < 256; ++j)
      for (int q = 0; q < 300; ++q) ref_t[(size_t)(i * 256 + j)] += xv[(size_t)(i * 300 + q)] * tv[(size_t)(q * 256 + j)];
  spore::test::expect_close(got[2], ref_t, spore::test::Tol{1e-5, 1e-5}, "matmul over the padded transposed weight");
  // run_passes runs it with `inference` only.
  PassOptions o;
  o.inference = true;
  Graph again = b.g;
  const std::vector<PassStats> stats = run_passes(again, o);
  EXPECT_TRUE(std::any_of(stats.begin(), stats.end(), [](const PassStats& p) { return p.pass == "pitch"; }));
}

}  // namespace
}  // namespace spore::graph
