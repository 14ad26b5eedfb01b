// Lite's executor (NOTE [Lite executor]): the load-time rewriting (folded constants, BatchNorm
// and ReLU6 / ReLU / Clip merged into fused_conv2d) and the memory-planned step list give what
// the framework computes eagerly, at every SIMD level this CPU has, on MobileNetV2 blocks and a
// BERT-style encoder layer, from Spore IR and from ONNX; SPORE_LITE_FUSION=0 runs the file as
// written, which must equal eager mode bit for bit.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>

#include "../io/io_test_util.h"
#include "backends/cpu/cpu_features.h"
#include "lite/executor.h"
#include "lite/onnx_smoke_models.h"
#include "spore/export.h"
#include "spore/lite.h"
#include "spore/onnx.h"
#include "spore/nn/activation.h"
#include "spore/nn/normalization.h"
#include "spore/ops.h"

namespace spore::test {
namespace {

using cpu::SimdLevel;

double max_abs(const Tensor& a, const Tensor& b) { return max_abs_difference(a, b); }

int count_ops(const graph::Graph& g, OpId op) {
  int c = 0;
  for (const Node& n : g.nodes()) c += n.op() == op;
  return c;
}

// Runs `check` at each SIMD level up to the best this CPU has, restoring the level after.
template <class F>
void at_every_level(F&& check) {
  const SimdLevel saved = cpu::simd_level();
  for (SimdLevel level : {SimdLevel::kGeneric, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
    if (level > cpu::best_simd_level()) continue;
    cpu::set_simd_level(level);
    SCOPED_TRACE(cpu::simd_level_name(level));
    check();
  }
  cpu::set_simd_level(saved);
}

// A Lite model built with SPORE_LITE_FUSION as given (the variable is read at build; the
// caller's own setting is restored after).
lite::Model build(const std::filesystem::path& path, bool fusion) {
  const char* before = std::getenv("SPORE_LITE_FUSION");
  const std::string saved = before ? before : "";
  setenv("SPORE_LITE_FUSION", fusion ? "1" : "0", 1);
  lite::Model m = lite::Model::build_from_file(path);
  if (before) setenv("SPORE_LITE_FUSION", saved.c_str(), 1);
  else unsetenv("SPORE_LITE_FUSION");
  return m;
}

// The MobileNetV2 pieces of tests/lite/onnx_smoke_models.h: a strided 3x3 stem, an inverted
// residual that changes width (expand 1x1, depthwise 3x3 stride 2, project), one with the
// residual add (stride 1), and a 1x1 ConvBN + ReLU6; odd extents so the depthwise kernel's edge
// columns and rows are exercised.
std::shared_ptr<nn::SequentialCell> mobilenet_blocks() {
  using namespace onnx_models;
  auto net = std::make_shared<nn::SequentialCell>(std::vector<nn::CellPtr>{
      std::make_shared<ConvBN>(3, 16, 3, 2, 1, true, 11), std::make_shared<InvertedResidual>(16, 24, 2, 6, 12),
      std::make_shared<InvertedResidual>(24, 24, 1, 6, 13), std::make_shared<ConvBN>(24, 40, 1, 1, 1, true, 14)});
  net->set_train(false);
  return net;
}

// Float32 tolerance of the fused graph: folding a BatchNorm into the weights rounds
// scale * weight once more to float32, a few ulps per layer; 1e-5 of the output's magnitude.
constexpr double kFusedRelTol = 1e-5;

TEST(LiteExecutor, MobileNetBlocksFusedUnfusedAndEagerAgree) {
  TempDir dir;
  auto net = mobilenet_blocks();
  const Tensor x = random_uniform({2, 3, 23, 19}, 5, -1, 1);
  export_model(*net, {x}, dir / "blocks.spore");
  export_onnx(*net, {x}, dir / "blocks.onnx");
  unsetenv("SPORE_LITE_FUSION");  // the default: the rewriting runs
  for (const char* file : {"blocks.spore", "blocks.onnx"}) {
    // What the graph library's passes did to the planned graph: every convolution fused, with
    // its BatchNorm and ReLU6 (no BatchNorm arithmetic or clamp left), and with
    // SPORE_LITE_FUSION=0 the graph as written.
    SCOPED_TRACE(file);
    const ir::Graph g = std::string(file).ends_with(".onnx") ? onnx::read_onnx(dir / file).graph : ir::read_model(dir / file).graph;
    lite::Executor ex(g, Device::cpu(), "blocks");
    ex.plan({x.shape()});
    ASSERT_NE(ex.planned_graph(), nullptr);
    EXPECT_EQ(count_ops(*ex.planned_graph(), OpId::k_fused_conv2d), 8);
    for (OpId op : {OpId::k_conv2d, OpId::k_mul, OpId::k_sub, OpId::k_relu6, OpId::k_minimum, OpId::k_maximum})
      EXPECT_EQ(count_ops(*ex.planned_graph(), op), 0) << op_def(op).name;
    setenv("SPORE_LITE_FUSION", "0", 1);
    lite::Executor plain(g, Device::cpu(), "blocks");
    plain.plan({x.shape()});
    unsetenv("SPORE_LITE_FUSION");
    EXPECT_EQ(count_ops(*plain.planned_graph(), OpId::k_fused_conv2d), 0);
    EXPECT_EQ(count_ops(*plain.planned_graph(), OpId::k_conv2d), 8);
  }
  at_every_level([&] {
    const Tensor want = (*net)(x);
    for (const char* file : {"blocks.spore", "blocks.onnx"}) {
      SCOPED_TRACE(file);
      lite::Model fused = build(dir / file, true), plain = build(dir / file, false);
      for (int rep = 0; rep < 2; ++rep) {  // the second run reuses the planned buffers
        const Tensor f = fused.predict({x})[0], p = plain.predict({x})[0];
        EXPECT_EQ(p.to_vector<float>(), want.to_vector<float>()) << "unfused Lite against eager, run " << rep;
        EXPECT_LE(max_abs(f, want), kFusedRelTol * max_magnitude(want)) << "fused Lite against eager, run " << rep;
      }
    }
  });
}

// conv2d + bias + clamp in float64, the reference of fused_conv2d.
Tensor clamp_ref(const Tensor& x, const Tensor& k, const Tensor& b, const Conv2dOptions& o) {
  const Tensor y = add(conv2d(x.to(DType::kFloat64), k.to(DType::kFloat64), o), reshape(b.to(DType::kFloat64), {1, -1, 1, 1}));
  return minimum(maximum(y, Tensor::scalar(-0.6)), Tensor::scalar(0.7));
}

TEST(LiteExecutor, TheDepthwiseKernelMatchesFloat64AtEveryLevel) {
  // fused_conv2d's depthwise plane kernel (3x3, 5x5, 7x7 with "same" padding) against float64
  // conv2d + bias + clamp, strides 1 and 2, widths around the vector lengths (edge columns,
  // tails) and heights under the kernel's (rows of zeros on both sides).
  for (int64_t ks : {3, 5, 7})
    for (int64_t stride : {1, 2})
      for (int64_t h : {2, 5})
        for (int64_t w : {1, 2, 7, 16, 17, 33}) {
          const Tensor x = random_uniform({2, 3, h, w}, 7 + w, -1, 1), k = random_uniform({3, 1, ks, ks}, 8, -1, 1),
                       b = random_uniform({3}, 9, -0.5, 0.5);
          Conv2dOptions o;
          o.stride = {stride, stride};
          o.padding = {ks / 2, ks / 2};
          o.groups = 3;
          const Tensor ref = clamp_ref(x, k, b, o);
          at_every_level([&] {
            const Tensor got = dispatch1(OpId::k_fused_conv2d, {x, k, b},
                                         Attrs::of(o.stride, o.padding, std::vector<int64_t>{1, 1}, int64_t{3}, -0.6, 0.7));
            EXPECT_LE(max_abs(got, ref), 2e-6) << ks << "x" << ks << ", stride " << stride << ", " << h << "x" << w;
          });
        }
}

TEST(LiteExecutor, TheFewChannelPlaneKernelMatchesFloat64AtEveryLevel) {
  // A dense k x k convolution over 3 input channels (an RGB stem) sums the channels' planes in
  // place with the same kernel, clamping after the last.
  for (int64_t ks : {3, 5})
    for (int64_t stride : {1, 2}) {
      const Tensor x = random_uniform({1, 3, 9, 19}, 30 + ks, -1, 1), k = random_uniform({4, 3, ks, ks}, 31, -1, 1),
                   b = random_uniform({4}, 32, -0.5, 0.5);
      Conv2dOptions o;
      o.stride = {stride, stride};
      o.padding = {ks / 2, ks / 2};
      const Tensor ref = clamp_ref(x, k, b, o);
      at_every_level([&] {
        const Tensor got = dispatch1(OpId::k_fused_conv2d, {x, k, b},
                                     Attrs::of(o.stride, o.padding, std::vector<int64_t>{1, 1}, int64_t{1}, -0.6, 0.7));
        EXPECT_LE(max_abs(got, ref), 4e-6) << ks << "x" << ks << ", stride " << stride;
      });
    }
}

TEST(LiteExecutor, ConvolutionEpiloguesEqualTheSeparateOpsAtEveryLevel) {
  // NOTE [Convolution epilogues]: the epilogue runs on each task's output planes with the
  // elementwise kernels' own loops, so fused_conv2d with SiLU (sigmoid, mul) or hard-swish (mul,
  // add, maximum, minimum, mul by one-element inputs) as its epilogue equals, bit for bit, the
  // same fused_conv2d followed by those ops. The three kernel paths: depthwise planes, a
  // three-channel stem, and the general one (oneDNN, blocked or not, then the bias sweep); planes
  // from 1x1 to 40x40 (many planes per task, and a plane longer than a fused block).
  struct Case {
    std::vector<int64_t> x, k;
    int64_t groups, stride, pad;
  };
  const Case cases[] = {{{1, 4, 9, 11}, {4, 1, 3, 3}, 4, 1, 1}, {{1, 3, 40, 40}, {8, 3, 3, 3}, 1, 2, 1},
                        {{1, 16, 40, 40}, {16, 16, 3, 3}, 1, 1, 1}, {{2, 8, 1, 1}, {6, 8, 1, 1}, 1, 1, 0},
                        {{1, 32, 10, 10}, {32, 32, 3, 3}, 1, 1, 1}};
  const Tensor third = Tensor::scalar(1.0f / 6), half = Tensor::scalar(0.5f), zero = Tensor::scalar(0.0f),
               one = Tensor::scalar(1.0f);
  for (const Case& c : cases) {
    const Tensor x = random_uniform(c.x, 40, -2, 2), k = random_uniform(c.k, 41, -0.5, 0.5), b = random_uniform({c.k[0]}, 42, -1, 1);
    const std::vector<int64_t> st{c.stride, c.stride}, pad{c.pad, c.pad}, dil{1, 1};
    SCOPED_TRACE(Shape(c.x).str() + " * " + Shape(c.k).str());
    at_every_level([&] {
      const Tensor y = dispatch1(OpId::k_fused_conv2d, {x, k, b}, Attrs::of(st, pad, dil, c.groups, -INFINITY, INFINITY));
      const Tensor silu = dispatch1(OpId::k_fused_conv2d, {x, k, b},
                                    Attrs::of(st, pad, dil, c.groups, -INFINITY, INFINITY, std::string("sigmoid %0; mul %0 $0")));
      EXPECT_EQ(silu.to_vector<float>(), mul(y, sigmoid(y)).to_vector<float>());
      const Tensor hs = dispatch1(OpId::k_fused_conv2d, {x, k, b, third, half, zero, one},
                                  Attrs::of(st, pad, dil, c.groups, -INFINITY, INFINITY,
                                            std::string("mul %0 %1; add $0 %2; maximum $1 %3; minimum $2 %4; mul %0 $3")));
      EXPECT_EQ(hs.to_vector<float>(), mul(y, minimum(maximum(add(mul(y, third), half), zero), one)).to_vector<float>());
    });
  }
}

TEST(LiteExecutor, ConvolutionEpiloguesAreCheckedByName) {
  const Tensor x = random_uniform({1, 2, 5, 5}, 43, -1, 1), k = random_uniform({3, 2, 3, 3}, 44, -1, 1), b = random_uniform({3}, 45, -1, 1);
  const std::vector<int64_t> one{1, 1};
  auto run = [&](std::vector<Tensor> in, const std::string& program) {
    return dispatch1(OpId::k_fused_conv2d, in, Attrs::of(one, one, one, int64_t{1}, -INFINITY, INFINITY, program));
  };
  auto code_of = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.code();
    }
    return ErrorCode::kInternal;
  };
  EXPECT_EQ(code_of([&] { run({x, k, b, random_uniform({2}, 46, 0, 1)}, "add %0 %1"); }), ErrorCode::kShape);
  EXPECT_EQ(code_of([&] { run({x, k, b, Tensor::scalar(1.0f)}, ""); }), ErrorCode::kValue);
  EXPECT_EQ(code_of([&] { run({x, k, b, Tensor::scalar(1.0f)}, "sigmoid %0"); }), ErrorCode::kValue);  // %1 unread
  EXPECT_EQ(code_of([&] { run({x, k, b}, "no_such_op %0"); }), ErrorCode::kValue);
  EXPECT_EQ(code_of([&] { run({x, k, b}, "cast:float64 %0"); }), ErrorCode::kDType);
  EXPECT_EQ(code_of([&] { run({x.to(DType::kFloat64), k.to(DType::kFloat64), b.to(DType::kFloat64)}, "sigmoid %0"); }),
            ErrorCode::kDType);
  // Six attributes (the epilogue left out, as before it existed): no epilogue.
  EXPECT_EQ(dispatch1(OpId::k_fused_conv2d, {x, k, b}, Attrs::of(one, one, one, int64_t{1}, -1.0, 1.0)).to_vector<float>(),
            dispatch1(OpId::k_fused_conv2d, {x, k, b}, Attrs::of(one, one, one, int64_t{1}, -1.0, 1.0, std::string())).to_vector<float>());
}

// A BERT-style encoder layer (post-LayerNorm, GELU), small: sequence 8, hidden 32, 4 heads, FFN 64.
// Its weights are made once, outside any trace, so the export captures them as parameters.
const int64_t kSeq = 8, kHidden = 32, kHeads = 4, kFfn = 64;
const std::vector<Tensor>& bert_weights() {
  static const std::vector<Tensor> w = [] {
    std::vector<Tensor> v;
    const int64_t shapes[6][2] = {{kHidden, kHidden}, {kHidden, kHidden}, {kHidden, kHidden},
                                  {kHidden, kHidden}, {kHidden, kFfn},    {kFfn, kHidden}};
    for (uint64_t i = 0; i < 6; ++i) {
      v.push_back(random_normal({shapes[i][0], shapes[i][1]}, i + 1, 0, 0.2));
      v.push_back(random_normal({shapes[i][1]}, i + 101, 0, 0.1));
    }
    return v;
  }();
  return w;
}

std::vector<Tensor> bert_layer(const std::vector<Tensor>& in) {
  const int64_t s = kSeq, h = kHidden, heads = kHeads, d = h / heads;
  const std::vector<Tensor>& w = bert_weights();
  auto dense = [&](const Tensor& x, int i) { return add(matmul(x, w[(size_t)(2 * i)]), w[(size_t)(2 * i + 1)]); };
  auto heads_of = [&](const Tensor& t) { return permute(reshape(t, {1, s, heads, d}), {0, 2, 1, 3}); };
  auto layer_norm = [&](const Tensor& t) {
    const Tensor mu = mean(t, {-1}, true);
    return mul(sub(t, mu), rsqrt(add(var(t, {-1}, 0, true), 1e-12)));
  };
  const Tensor& x = in[0];
  const Tensor q = heads_of(dense(x, 0)), k = heads_of(dense(x, 1)), v = heads_of(dense(x, 2));
  const Tensor p = softmax(mul(matmul(q, permute(k, {0, 1, 3, 2})), 1.0 / std::sqrt((double)d)), -1);
  const Tensor c = reshape(permute(matmul(p, v), {0, 2, 1, 3}), {1, s, h});
  const Tensor h1 = layer_norm(add(dense(c, 3), x));
  return {layer_norm(add(dense(gelu(dense(h1, 4)), 5), h1))};
}

TEST(LiteExecutor, BertLayerFusedUnfusedAndEagerAgree) {
  TempDir dir;
  const Tensor x = random_normal({1, kSeq, kHidden}, 21);
  bert_weights();
  export_model(bert_layer, {x}, dir / "bert.spore");
  export_onnx(bert_layer, {x}, dir / "bert.onnx");
  unsetenv("SPORE_LITE_FUSION");
  {  // ONNX has no Gelu before op set 20: the exporter writes the erf formula, Lite makes it gelu again
    lite::Executor ex(onnx::read_onnx(dir / "bert.onnx").graph, Device::cpu(), "bert");
    ex.plan({x.shape()});
    EXPECT_EQ(count_ops(*ex.planned_graph(), OpId::k_gelu), 1);
    EXPECT_EQ(count_ops(*ex.planned_graph(), OpId::k_erf), 0);
  }
  at_every_level([&] {
    const Tensor want = bert_layer({x})[0];
    for (const char* file : {"bert.spore", "bert.onnx"}) {
      SCOPED_TRACE(file);
      lite::Model fused = build(dir / file, true), plain = build(dir / file, false);
      EXPECT_LE(max_abs(plain.predict({x})[0], want), 1e-5);
      EXPECT_LE(max_abs(fused.predict({x})[0], want), 1e-5);
    }
  });
}

// A graph with a symbolic batch is planned per signature through the graph library's passes, and
// the plans of earlier signatures are kept: alternating batch sizes plan each once.
TEST(LiteExecutor, EachSignatureIsPlannedOnceAndKept) {
  ir::Graph g;
  const Tensor w = random_uniform({3, 2, 3, 3}, 31, -1, 1), b = random_uniform({1, 3, 1, 1}, 32, -1, 1);
  auto value = [&](ir::ValueKind kind, std::vector<ir::Dim> dims, Tensor data = {}) {
    g.values.push_back({"", kind, DType::kFloat32, std::move(dims), std::move(data)});
    return (uint32_t)g.values.size() - 1;
  };
  const std::vector<ir::Dim> act{{-1, "N"}, {3, ""}, {5, ""}, {5, ""}};
  const uint32_t x = value(ir::ValueKind::kInput, {{-1, "N"}, {2, ""}, {5, ""}, {5, ""}});
  const uint32_t wv = value(ir::ValueKind::kConstant, {{3, ""}, {2, ""}, {3, ""}, {3, ""}}, w);
  const uint32_t bv = value(ir::ValueKind::kConstant, {{1, ""}, {3, ""}, {1, ""}, {1, ""}}, b);
  const uint32_t c = value(ir::ValueKind::kNode, act), a = value(ir::ValueKind::kNode, act), y = value(ir::ValueKind::kNode, act);
  const Attrs conv_attrs = Attrs::of(std::vector<int64_t>{1, 1}, std::vector<int64_t>{1, 1}, std::vector<int64_t>{1, 1}, int64_t{1});
  g.nodes.push_back({&op_def(OpId::k_conv2d), conv_attrs, {x, wv}, {c}, {}});
  g.nodes.push_back({&op_def(OpId::k_add), {}, {c, bv}, {a}, {}});
  g.nodes.push_back({&op_def(OpId::k_relu), {}, {a}, {y}, {}});
  g.inputs = {x};
  g.outputs = {y};
  unsetenv("SPORE_LITE_FUSION");
  lite::Executor ex(g, Device::cpu(), "symbolic");
  std::vector<const graph::Graph*> planned;
  for (int64_t n : {1, 2, 1, 2}) {
    const Tensor in = random_uniform({n, 2, 5, 5}, 33 + (uint64_t)n, -1, 1);
    if (!ex.planned_for({in.shape()})) ex.plan({in.shape()});
    planned.push_back(ex.planned_graph());
    EXPECT_EQ(count_ops(*ex.planned_graph(), OpId::k_fused_conv2d), 1);
    Conv2dOptions o;
    o.padding = {1, 1};
    const Tensor want = relu(add(conv2d(in, w, o), b));
    EXPECT_LE(max_abs(ex.run({in})[0], want), kFusedRelTol * max_magnitude(want)) << "batch " << n;
  }
  EXPECT_EQ(ex.plans_made(), 2);
  EXPECT_NE(planned[0], planned[1]);
  EXPECT_EQ(planned[2], planned[0]) << "batch 1's plan was kept";
  EXPECT_EQ(planned[3], planned[1]) << "batch 2's plan was kept";
}

TEST(LiteExecutor, Float16BlocksStayWithin1e2) {
  // The blocks computed in float16 (to_float: parameters cast where used): convolutions in
  // float16 are not fused (the folding is float32's), the casts of the weights fold at load.
  TempDir dir;
  auto net = mobilenet_blocks();
  const Tensor x = random_uniform({1, 3, 23, 19}, 6, -1, 1);
  const Tensor want = (*net)(x);
  net->to_float(DType::kFloat16);
  export_model(*net, {x}, dir / "blocks16.spore");
  lite::Model m = build(dir / "blocks16.spore", true);
  const Tensor got = m.predict({x})[0];
  EXPECT_LE(max_abs(got, want), 1e-2 * std::max(1.0, max_magnitude(want)));
}

}  // namespace
}  // namespace spore::test
