// Gradients through the LLM blocks (NOTE [LLM gradients]): rms_norm, rope (every layout and
// scaling option) and attention (causal from a past offset, grouped-query heads, v's own head
// size, more query steps and keys than one tile) against central differences in float64;
// attention's block-recomputing kernel against a float64 matmul / softmax composition at every
// SIMD level, without any [S, T] tensor; matmul_q's gradient for its activations against the
// dequantised weight in float64, and its refusal to differentiate the frozen weight.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "autograd/gradcheck.h"
#include "ops/llm_test_util.h"
#include "spore/autograd.h"
#include "spore/jit.h"
#include "spore/llm.h"
#include "spore/op_registry.h"
#include "spore/ops.h"
#include "spore/quant.h"
#include "test_util.h"

namespace spore::test {
namespace {

const DType f64 = DType::kFloat64, f32 = DType::kFloat32;

Tensor rnd(const std::vector<int64_t>& shape, uint32_t seed, DType t = f64, double lo = -1, double hi = 1) {
  Shape s(shape);
  return make_tensor(random_values(s.numel(), t, lo, hi, seed), s, t);
}

Tensor positions(std::vector<int64_t> p) { return Tensor::from_vector(p, Shape{(int64_t)p.size()}); }

// ---- rms_norm -------------------------------------------------------------------------------
TEST(LlmGrad, RmsNormInputAndWeightMatchFiniteDifferences) {
  for (double eps : {1e-6, 0.5}) {  // a large eps changes the rule's r
    SCOPED_TRACE(eps);
    gradcheck([eps](const std::vector<Tensor>& x) { return rms_norm(x[0], x[1], eps); },
              {rnd({2, 3, 5}, 1), rnd({5}, 2)}, {0, 1}, 1e-6, 1e-6, "rms_norm");
  }
  // Qwen3's per-head q / k norm: the same op over [B, S, H, Dh] with a weight of Dh.
  gradcheck([](const std::vector<Tensor>& x) { return rms_norm(x[0], x[1], 1e-6); },
            {rnd({1, 2, 3, 4}, 3), rnd({4}, 4)}, {0, 1}, 1e-6, 1e-6, "per-head rms_norm");
}

// ---- rope -----------------------------------------------------------------------------------
TEST(LlmGrad, RopeEveryLayoutAndScalingMatchesFiniteDifferences) {
  struct Case {
    const char* what;
    std::vector<int64_t> shape;
    int64_t seq_axis;
    bool interleaved;
    double scale, theta_scale;
    std::vector<float> inv_freq;
  };
  const std::vector<Case> cases = {
      {"half-split (NeoX / HF), full rotary", {1, 2, 3, 6}, -2, false, 1.0, 0, {1.0f, 0.3f, 0.05f}},
      {"interleaved (GPT-J / GGUF llama), full", {1, 2, 3, 6}, -2, true, 1.0, 0, {1.0f, 0.3f, 0.05f}},
      {"partial rotary: features 4, 5 pass", {2, 1, 3, 6}, -2, false, 1.0, 0, {0.7f, 0.2f}},
      {"interleaved partial", {2, 1, 3, 6}, -2, true, 1.0, 0, {0.7f, 0.2f}},
      {"LongRoPE / YaRN attention factor", {1, 2, 3, 4}, -2, false, 1.3, 0, {0.9f, 0.1f}},
      {"ggml's theta-scale angles, llama3 factors", {1, 2, 3, 8}, -2, true, 1.0, 0.4, {1.0f, 1.0f, 0.5f, 0.125f}},
      {"[B, S, H, D] (seq_axis -3)", {1, 3, 2, 4}, -3, false, 0.8, 0, {1.0f, 0.25f}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const Tensor pos = positions({0, 7, 3});
    const Tensor freq = Tensor::from_vector(c.inv_freq, Shape{(int64_t)c.inv_freq.size()});
    const RopeOptions o{c.seq_axis, c.interleaved, c.scale, false, c.theta_scale};
    gradcheck([&](const std::vector<Tensor>& x) { return rope(x[0], pos, freq, o); }, {rnd(c.shape, 5)}, {0},
              1e-6, 1e-6, c.what);
  }
}

// ---- attention ------------------------------------------------------------------------------
struct AttnCase {
  const char* what;
  int64_t B, Hq, Hkv, S, T, D, Dv, past;
  double scale;
  int64_t window = 0;
  double softcap = 0;
};
const std::vector<AttnCase> kAttnCases = {
    {"grouped heads, queries from position 2 of a 5-row cache", 2, 4, 2, 3, 5, 4, 3, 2, 0.5},
    {"multi-head prefill, default scale", 1, 2, 2, 4, 4, 3, 3, 0, 0},
    {"decode: one query over the cache", 1, 4, 1, 1, 6, 2, 2, 5, 0.7},
    {"more query steps than a block, more keys than a tile", 1, 2, 1, 20, 75, 2, 2, 50, 0.9},
    {"sliding window of 10 that skips whole key tiles", 1, 2, 1, 20, 150, 2, 2, 130, 0.8, 10},
    {"soft-capped scores (cap 1.5)", 1, 2, 2, 4, 6, 3, 3, 2, 2.0, 0, 1.5},
    {"window, cap and grouped heads together", 2, 4, 2, 5, 9, 3, 2, 4, 0, 3, 0.7},
};

TEST(LlmGrad, AttentionMatchesFiniteDifferences) {
  for (const AttnCase& c : kAttnCases) {
    SCOPED_TRACE(c.what);
    const std::vector<Tensor> in = {rnd({c.B, c.Hq, c.S, c.D}, 11), rnd({c.B, c.Hkv, c.T, c.D}, 12),
                                    rnd({c.B, c.Hkv, c.T, c.Dv}, 13)};
    gradcheck(
        [&](const std::vector<Tensor>& x) { return attention(x[0], x[1], x[2], c.scale, c.past, false, c.window, c.softcap); },
        in, {0, 1, 2}, 1e-6, 1e-6, c.what);
  }
}

// Attention as matmul, tanh for the cap, a causal (and windowed) where and softmax, in the inputs'
// dtype (float64 here): the independent reference, differentiated by those ops' own rules.
Tensor composed_attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttnCase& c) {
  const double past = (double)c.past;
  double scale = c.scale;
  const int64_t S = q.shape()[2], T = k.shape()[2], g = q.shape()[1] / k.shape()[1];
  auto repeat = [g](const Tensor& t) {
    const Shape& s = t.shape();
    Tensor e = expand(reshape(t, {s[0], s[1], 1, s[2], s[3]}), {s[0], s[1], g, s[2], s[3]});
    return reshape(e.contiguous(), {s[0], s[1] * g, s[2], s[3]});
  };
  std::vector<uint8_t> allowed((size_t)(S * T));
  for (int64_t i = 0; i < S; ++i)
    for (int64_t j = 0; j < T; ++j)
      allowed[(size_t)(i * T + j)] = j <= past + i && (c.window == 0 || j > past + i - c.window);
  const Tensor mask = Tensor::from_bytes(allowed.data(), Shape{S, T}, DType::kBool, Device::cpu());
  if (scale <= 0) scale = 1 / std::sqrt((double)q.shape()[3]);
  Tensor s = mul(matmul(q, transpose(repeat(k), -2, -1)), scale);
  if (c.softcap > 0) s = mul(tanh(mul(s, 1 / c.softcap)), c.softcap);
  const Tensor p = softmax(where(mask, s, scalar_like(s, -std::numeric_limits<double>::infinity())), -1);
  return matmul(p, repeat(v));
}

TEST(LlmGrad, AttentionKernelMatchesAFloat64CompositionAtEveryLevel) {
  for (const AttnCase& c : kAttnCases) {
    for (DType cache : {f32, DType::kFloat16}) {
      SCOPED_TRACE(std::string(c.what) + (cache == f32 ? ", float32 cache" : ", float16 cache"));
      const Tensor q = rnd({c.B, c.Hq, c.S, c.D}, 21, f32, -2, 2);
      const Tensor k = cast(rnd({c.B, c.Hkv, c.T, c.D}, 22, f32, -2, 2), cache);
      const Tensor v = cast(rnd({c.B, c.Hkv, c.T, c.Dv}, 23, f32), cache);
      const Tensor w = rnd({c.B, c.Hq, c.S, c.Dv}, 24);
      auto loss = [&](DType t, auto attn) {
        return [&, t, attn](const std::vector<Tensor>& x) { return sum(mul(attn(x[0], x[1], x[2]), cast(w, t))); };
      };
      const ValueAndGrad want = value_and_grad(loss(f64, [&](const Tensor& a, const Tensor& b, const Tensor& d) {
                                                 return composed_attention(a, b, d, c);
                                               }),
                                               {0, 1, 2})({cast(q, f64), cast(k, f64), cast(v, f64)});
      const std::vector<double> want_out =
          composed_attention(cast(q, f64), cast(k, f64), cast(v, f64), c).to_vector<double>();
      at_every_level([&] {
        const std::vector<double> out =
            cast(attention(q, k, v, c.scale, c.past, false, c.window, c.softcap), f64).to_vector<double>();
        ASSERT_EQ(out.size(), want_out.size());
        for (size_t j = 0; j < out.size(); ++j) EXPECT_NEAR(out[j], want_out[j], 2e-5 * (1 + std::abs(want_out[j])));
        const ValueAndGrad got = value_and_grad(loss(f32, [&](const Tensor& a, const Tensor& b, const Tensor& d) {
                                                  return attention(a, b, d, c.scale, c.past, false, c.window,
                                                                   c.softcap);
                                                }),
                                                {0, 1, 2})({q, k, v});
        for (int i = 0; i < 3; ++i) {
          SCOPED_TRACE("gradient of input " + std::to_string(i));
          EXPECT_EQ(got.input_grads[i].dtype(), (i == 0 ? q : i == 1 ? k : v).dtype());
          const std::vector<double> a = cast(got.input_grads[i], f64).to_vector<double>();
          const std::vector<double> b = want.input_grads[i].to_vector<double>();
          ASSERT_EQ(a.size(), b.size());
          // float32 sums of a few terms; a float16 gradient also rounds to 11 bits.
          const double tol = cache == f32 || i == 0 ? 2e-5 : 2e-3;
          for (size_t j = 0; j < a.size(); ++j) EXPECT_NEAR(a[j], b[j], tol * (1 + std::abs(b[j]))) << j;
        }
      });
    }
  }
}

// Records the largest tensor any op makes.
struct LargestOutput final : DispatchObserver {
  void on_op(const OpDef& d, std::span<const Tensor>, const Attrs&, std::span<const Tensor> outs) override {
    for (const Tensor& o : outs)
      if (o.numel() > largest) largest = o.numel(), by = d.name;
  }
  int64_t largest = 0;
  std::string by;
};

TEST(LlmGrad, AttentionBackwardNeverHoldsTheProbabilityMatrix) {
  const int64_t S = 192, T = 192, D = 8;  // the [S, T] scores are 4.5 times q's size
  const std::vector<Tensor> in = {rnd({1, 1, S, D}, 31, f32), rnd({1, 1, T, D}, 32, f32), rnd({1, 1, T, D}, 33, f32)};
  LargestOutput obs;
  DispatchObserverGuard guard(&obs);
  value_and_grad([](const std::vector<Tensor>& x) { return sum(attention(x[0], x[1], x[2])); }, {0, 1, 2})(in);
  EXPECT_LT(obs.largest, S * T) << "made by " << obs.by;
  EXPECT_EQ(obs.largest, S * D);
}

TEST(LlmGrad, AttentionGradRejectsMismatchedInputs) {
  const Tensor q = rnd({1, 2, 3, 4}, 1, f32), k = rnd({1, 1, 5, 4}, 2, f32), v = rnd({1, 1, 5, 2}, 3, f32);
  const Tensor o = rnd({1, 2, 3, 2}, 4, f32);
  auto run = [&](const Tensor& kk, const Tensor& oo) {
    const Tensor in[] = {q, kk, v, oo, oo};
    dispatch(OpId::k_attention_grad, in, Attrs::of(0.0, int64_t{1}, int64_t{0}, 0.0));
  };
  EXPECT_EQ(error_code_of([&] { run(cast(k, DType::kFloat16), o); }), ErrorCode::kDType);
  EXPECT_EQ(error_code_of([&] { run(k, rnd({1, 2, 3, 3}, 5, f32)); }), ErrorCode::kShape);
  EXPECT_EQ(error_code_of([&] { run(rnd({1, 1, 3, 4}, 6, f32), o); }), ErrorCode::kShape);  // past + S > T
  // attention's own window and cap: negative values, and either under the ggml numerics.
  EXPECT_EQ(error_code_of([&] { attention(q, k, v, 0, 1, false, -1); }), ErrorCode::kValue);
  EXPECT_EQ(error_code_of([&] { attention(q, k, v, 0, 1, false, 0, -2.0); }), ErrorCode::kValue);
  EXPECT_EQ(error_code_of([&] { attention(q, k, v, 0, 1, true, 4); }), ErrorCode::kUnsupported);
  EXPECT_EQ(error_code_of([&] { attention(q, k, v, 0, 1, true, 0, 30.0); }), ErrorCode::kUnsupported);
}

// ---- matmul_q -------------------------------------------------------------------------------
// A weight [n, k] of `type` from random values, and its dequantised values [n, k] in float64.
struct QWeight {
  Tensor blocks, dequantized;
};
QWeight quantized(GgmlType type, int64_t n, int64_t k, uint32_t seed) {
  const std::vector<double> v = random_values(n * k, f32, -1, 1, seed);
  const size_t rb = quant_row_bytes(type, k);
  std::vector<uint8_t> bytes(n * rb);
  std::vector<float> deq((size_t)(n * k));
  for (int64_t r = 0; r < n; ++r) {
    std::vector<float> row(v.begin() + r * k, v.begin() + (r + 1) * k);
    quantize_row(type, row, std::span<uint8_t>(bytes.data() + r * rb, rb));
    dequantize_row(type, std::span<const uint8_t>(bytes.data() + r * rb, rb), std::span<float>(deq.data() + r * k, k));
  }
  const bool wide = type == GgmlType::kF16 || type == GgmlType::kBF16;
  const Shape shape = wide ? Shape{n, k} : Shape{n, (int64_t)rb};
  const DType dt = type == GgmlType::kF16 ? DType::kFloat16 : type == GgmlType::kBF16 ? DType::kBFloat16 : DType::kUInt8;
  return {Tensor::from_bytes(bytes.data(), shape, dt, Device::cpu()),
          cast(Tensor::from_vector(deq, Shape{n, k}), f64)};
}

TEST(LlmGrad, MatmulQGradientOfTheActivationsIsTheDequantisedTranspose) {
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ4_K, GgmlType::kF16}) {
    const std::string name = std::string(quant_traits(type).key);
    SCOPED_TRACE(name);
    const int64_t m = 37, n = 45, k = 256;  // n is not a multiple of the kernel's row tile
    const QWeight w = quantized(type, n, k, 41);
    const Tensor x = rnd({m, k}, 42, f32), r = rnd({m, n}, 43, f32);
    // d/dx sum(matmul_q(x, w) * r) = r W; W's values exactly, products and sums in float64.
    const std::vector<double> want = matmul(cast(r, f64), w.dequantized).to_vector<double>();
    at_every_level([&] {
      const ValueAndGrad got = value_and_grad(
          [&](const std::vector<Tensor>& in) { return sum(mul(matmul_q(in[0], w.blocks, name), r)); })({x});
      ASSERT_EQ(got.input_grads[0].shape(), x.shape());
      ASSERT_EQ(got.input_grads[0].dtype(), f32);
      const std::vector<double> a = cast(got.input_grads[0], f64).to_vector<double>();
      for (size_t j = 0; j < a.size(); ++j) EXPECT_NEAR(a[j], want[j], 1e-5 * (1 + std::abs(want[j]))) << j;
    });
  }
}

TEST(LlmGrad, MatmulQInFloat64IsTheExactDequantisedProductAndMatchesFiniteDifferences) {
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    const std::string name = std::string(quant_traits(type).key);
    SCOPED_TRACE(name);
    const QWeight w = quantized(type, 5, 64, 51);
    const Tensor x = rnd({3, 64}, 52);
    const std::vector<double> got = matmul_q(x, w.blocks, name).to_vector<double>();
    const std::vector<double> want = matmul(x, transpose(w.dequantized, 0, 1)).to_vector<double>();
    for (size_t j = 0; j < got.size(); ++j) EXPECT_NEAR(got[j], want[j], 1e-12) << j;
    gradcheck([&](const std::vector<Tensor>& in) { return matmul_q(in[0], w.blocks, name); }, {x}, {0}, 1e-6, 1e-7,
              name);
  }
}

TEST(LlmGrad, MatmulQRefusesAGradientForTheFrozenWeight) {
  const QWeight w = quantized(GgmlType::kF16, 3, 32, 61);  // a float16 weight can be asked for
  const Tensor x = rnd({2, 32}, 62, f32);
  try {
    value_and_grad([](const std::vector<Tensor>& in) { return sum(matmul_q(in[0], in[1], "f16")); }, {0, 1})(
        {x, w.blocks});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("matmul_q"), std::string::npos) << msg;
    EXPECT_NE(msg.find("frozen"), std::string::npos) << msg;
    EXPECT_NE(msg.find("LoRA"), std::string::npos) << msg;
  }
  // The same through a Parameter holding the quantized blocks.
  const QWeight q = quantized(GgmlType::kQ8_0, 3, 32, 63);
  Parameter p(q.blocks, "base");
  EXPECT_EQ(error_code_of([&] {
              value_and_grad([&](const std::vector<Tensor>& in) { return sum(matmul_q(in[0], p.value(), "q8_0")); },
                             GradPosition::none(), {p})({x});
            }),
            ErrorCode::kUnsupported);
}

TEST(LlmGrad, MatmulQGradRejectsMismatchedShapes) {
  const QWeight w = quantized(GgmlType::kQ8_0, 3, 32, 71);
  auto run = [&](const Tensor& g, int64_t type) {  // the ggml type id, as matmul_q takes it
    const Tensor in[] = {g, w.blocks};
    dispatch(OpId::k_matmul_q_grad, in, Attrs::of(type));
  };
  const int64_t q8_0 = (int64_t)GgmlType::kQ8_0, q4_0 = (int64_t)GgmlType::kQ4_0;
  EXPECT_EQ(error_code_of([&] { run(rnd({2, 4}, 1, f32), q8_0); }), ErrorCode::kShape);  // n = 3
  EXPECT_EQ(error_code_of([&] { run(rnd({2, 3}, 1, DType::kFloat16), q8_0); }), ErrorCode::kDType);
  EXPECT_EQ(error_code_of([&] { run(rnd({2, 3}, 1, f32), q4_0); }), ErrorCode::kShape);  // 34-byte rows
  EXPECT_EQ(error_code_of([&] { run(rnd({2, 3}, 1, f32), 5); }), ErrorCode::kValue);  // no ggml type 5
  EXPECT_EQ(error_code_of([&] { run(rnd({2, 3}, 1, f32), 1000); }), ErrorCode::kValue);
}

// A compiled training step (a traced value_and_grad, run by the graph executor with its memory
// plan) over rms_norm, a q8_0 projection, rope and attention gives the eager gradients bitwise:
// attention_grad's three outputs and matmul_q_grad are ordinary graph nodes.
TEST(LlmGrad, ACompiledStepGivesTheEagerGradients) {
  const QWeight w = quantized(GgmlType::kQ4_0, 64, 32, 81);  // 8 heads of 8: 4 q, 2 k, 2 v
  const Tensor inv_freq = Tensor::from_vector<float>({1.0f, 0.3f, 0.1f, 0.02f});
  const Tensor pos = positions({0, 1, 2, 3, 4, 5, 6, 7});
  auto loss = [&](const std::vector<Tensor>& in) {
    const Tensor h = rms_norm(in[0], in[1], 1e-5);                                 // [8, 32]
    const Tensor qkv = reshape(matmul_q(h, w.blocks, "q4_0"), {1, 8, 8, 8});      // [1, S, 8 heads, 8]
    const Tensor x = rope(permute(qkv, {0, 2, 1, 3}), pos, inv_freq);             // [1, 8, S, 8]
    const Tensor q = slice(x, 1, 0, 4), k = slice(x, 1, 4, 6), v = slice(x, 1, 6, 8);
    return sum(mul(attention(q, k, v), attention(q, k, v, 0.25)));
  };
  auto step = [&](const std::vector<Tensor>& in) { return value_and_grad(loss, {0, 1})(in).input_grads; };
  const std::vector<Tensor> in = {rnd({8, 32}, 82, f32), rnd({32}, 83, f32)};
  const std::vector<Tensor> eager = step(in);
  JitFunction compiled = jit(TensorsFn(step));
  for (int call = 0; call < 2; ++call) {  // the trace, then the compiled graph
    const std::vector<Tensor> got = compiled(in);
    ASSERT_EQ(got.size(), 2u);
    for (int i = 0; i < 2; ++i)
      EXPECT_EQ(got[(size_t)i].to_vector<float>(), eager[(size_t)i].to_vector<float>()) << "call " << call << " input " << i;
  }
  EXPECT_EQ(compiled.stats().hits, 1);
}

}  // namespace
}  // namespace spore::test
