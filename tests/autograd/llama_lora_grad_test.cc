// End to end through the LLM ops (NOTE [LLM gradients]): the tiny random Llama of
// tests/fixtures/llm/llama (2 layers, grouped-query heads, llama3 rope scaling) written as a
// chain of registry ops (embedding, rms_norm, rope, attention, silu, matmul / matmul_q, log_softmax)
// reproduces transformers' logits, and with its projections quantised to q8_0 (a QLoRA-style
// frozen base) the gradient of a next-token loss for LoRA-like adapters on q, v and down
// projections matches central differences in float64.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <numbers>
#include <string>

#include "autograd/gradcheck.h"
#include "spore/format.h"
#include "spore/llm.h"
#include "spore/ops.h"
#include "spore/quant.h"
#include "test_util.h"

namespace spore::test {
namespace {

const std::string kDir = std::string(SPORE_SOURCE_DIR) + "/tests/fixtures/llm/llama/";
// hf/config.json of the fixture (the weights' shapes are checked against it below).
constexpr int64_t kHidden = 32, kHeads = 4, kKvHeads = 2, kHeadDim = 8, kFfn = 64, kLayers = 2, kVocab = 256;
constexpr double kEps = 1e-5, kTheta = 10000;

// The llama3 rope table as transformers' _compute_llama3_parameters forms it: wavelengths longer
// than original / low_freq_factor divided by factor, shorter than original / high_freq_factor
// kept, and a smooth blend between.
Tensor llama3_inv_freq() {
  const double factor = 4, low = 1, high = 4, original = 16;
  std::vector<float> f;
  for (int64_t i = 0; i < kHeadDim; i += 2) {
    const double inv = 1 / std::pow(kTheta, (double)i / kHeadDim), wavelen = 2 * std::numbers::pi / inv;
    double out = wavelen > original / low ? inv / factor : inv;
    if (!(wavelen < original / high) && !(wavelen > original / low)) {
      const double smooth = (original / wavelen - low) / (high - low);
      out = (1 - smooth) * out / factor + smooth * out;
    }
    f.push_back((float)out);
  }
  return Tensor::from_vector(f, Shape{(int64_t)f.size()});
}

// A projection's weight [out, in]: float (matmul with its transpose) or q8_0 blocks (matmul_q).
struct Proj {
  Tensor w;
  bool quantized = false;
  Tensor apply(const Tensor& x) const {
    return quantized ? matmul_q(x, w, "q8_0") : matmul(x, transpose(cast(w, x.dtype()), 0, 1));
  }
};

Proj q8_0(const Tensor& w) {
  const int64_t n = w.shape()[0], k = w.shape()[1];
  const size_t rb = quant_row_bytes(GgmlType::kQ8_0, k);
  const std::vector<float> v = w.contiguous().to_vector<float>();
  std::vector<uint8_t> bytes(n * rb);
  for (int64_t r = 0; r < n; ++r)
    quantize_row(GgmlType::kQ8_0, std::span<const float>(v.data() + r * k, k),
                 std::span<uint8_t>(bytes.data() + r * rb, rb));
  return {Tensor::from_bytes(bytes.data(), Shape{n, (int64_t)rb}, DType::kUInt8, Device::cpu()), true};
}

struct Model {
  std::map<std::string, Tensor, std::less<>> t;
  std::map<std::string, Proj> proj;
  Tensor inv_freq = llama3_inv_freq();

  explicit Model(bool quantize) {
    t = load_safetensors(kDir + "hf/model.safetensors").tensors;
    for (auto& [name, w] : t)
      if (name.find("_proj") != std::string::npos) proj[name] = quantize ? q8_0(w) : Proj{w, false};
    EXPECT_EQ(t.at("model.embed_tokens.weight").shape(), (Shape{kVocab, kHidden}));
    EXPECT_EQ(t.at("model.layers.0.self_attn.k_proj.weight").shape(), (Shape{kKvHeads * kHeadDim, kHidden}));
    EXPECT_EQ(t.at("model.layers.0.mlp.up_proj.weight").shape(), (Shape{kFfn, kHidden}));
  }
  Tensor w(const std::string& name, DType d) const { return cast(t.at(name), d); }
  const Proj& p(int64_t l, const std::string& name) const {
    return proj.at("model.layers." + std::to_string(l) + "." + name + ".weight");
  }
};

// LoRA-like adapters (A [r, in], B [out, r], scaled by alpha / r) on layer 0's q and v
// projections and layer 1's down projection, in that order in `lora`.
constexpr int64_t kRank = 2;
constexpr double kAlphaOverRank = 8.0 / kRank;
Tensor with_lora(const Proj& base, const Tensor& x, const Tensor* ab) {
  Tensor y = base.apply(x);
  if (ab) y = add(y, mul(matmul(matmul(x, transpose(ab[0], 0, 1)), transpose(ab[1], 0, 1)), kAlphaOverRank));
  return y;
}

// Logits [S, vocab] of tokens ids (positions 0..S-1) in dtype d; `lora` may be empty.
Tensor logits(const Model& m, const std::vector<int64_t>& ids, DType d, const std::vector<Tensor>& lora) {
  const int64_t S = (int64_t)ids.size();
  const Tensor pos = arange(0, S, 1, DType::kInt64);
  auto heads = [S](const Tensor& x, int64_t h) { return permute(reshape(x, {1, S, h, kHeadDim}), {0, 2, 1, 3}); };
  auto adapter = [&](int i) { return lora.empty() ? nullptr : &lora[(size_t)(2 * i)]; };
  Tensor x = embedding(Tensor::from_vector(ids, Shape{S}), m.w("model.embed_tokens.weight", d));
  for (int64_t l = 0; l < kLayers; ++l) {
    const std::string pre = "model.layers." + std::to_string(l) + ".";
    const Tensor h = rms_norm(x, m.w(pre + "input_layernorm.weight", d), kEps);
    const Tensor q = rope(heads(with_lora(m.p(l, "self_attn.q_proj"), h, l == 0 ? adapter(0) : nullptr), kHeads),
                          pos, m.inv_freq);
    const Tensor k = rope(heads(m.p(l, "self_attn.k_proj").apply(h), kKvHeads), pos, m.inv_freq);
    const Tensor v = heads(with_lora(m.p(l, "self_attn.v_proj"), h, l == 0 ? adapter(1) : nullptr), kKvHeads);
    const Tensor a = reshape(permute(attention(q, k, v), {0, 2, 1, 3}), {S, kHeads * kHeadDim});
    x = add(x, m.p(l, "self_attn.o_proj").apply(a));
    const Tensor h2 = rms_norm(x, m.w(pre + "post_attention_layernorm.weight", d), kEps);
    const Tensor mlp = mul(silu(m.p(l, "mlp.gate_proj").apply(h2)), m.p(l, "mlp.up_proj").apply(h2));
    x = add(x, with_lora(m.p(l, "mlp.down_proj"), mlp, l == 1 ? adapter(2) : nullptr));
  }
  x = rms_norm(x, m.w("model.norm.weight", d), kEps);
  return matmul(x, transpose(m.w("lm_head.weight", d), 0, 1));
}

TEST(LlamaLoraGrad, TheOpChainReproducesTransformersLogits) {
  const Model m(/*quantize=*/false);
  const SafeTensors ref = load_safetensors(kDir + "reference.safetensors");
  const std::vector<std::vector<int64_t>> prompts = {{1, 17, 42, 99, 3, 250, 7},
                                                     {5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}};
  for (size_t i = 0; i < prompts.size(); ++i) {
    const std::vector<float> got = logits(m, prompts[i], DType::kFloat32, {}).to_vector<float>();
    const std::vector<float> want = ref.at(i == 0 ? "logits_0" : "logits_2").to_vector<float>();
    ASSERT_EQ(got.size(), want.size());
    for (size_t j = 0; j < got.size(); ++j) ASSERT_NEAR(got[j], want[j], 1e-4) << "prompt " << i << " value " << j;
  }
}

TEST(LlamaLoraGrad, AdapterGradientsOverAQuantisedBaseMatchFiniteDifferences) {
  const Model m(/*quantize=*/true);
  const std::vector<int64_t> ids = {1, 17, 42, 99, 3, 250, 7};
  const int64_t S = (int64_t)ids.size();
  // Next-token targets as a one-hot [S - 1, vocab]: the loss is their mean negative log-likelihood.
  std::vector<double> onehot((size_t)((S - 1) * kVocab), 0.0);
  for (int64_t i = 0; i + 1 < S; ++i) onehot[(size_t)(i * kVocab + ids[(size_t)i + 1])] = 1;
  const Tensor target = Tensor::from_vector(onehot, Shape{S - 1, kVocab});
  auto loss = [&](const std::vector<Tensor>& lora) {
    const Tensor logp = log_softmax(slice(logits(m, ids, DType::kFloat64, lora), 0, 0, S - 1), -1);
    return mul(sum(mul(logp, target)), -1.0 / (double)(S - 1));
  };
  // A and B both non-zero (a trained adapter; LoRA's zero B would make A's gradient zero).
  const std::vector<Tensor> lora = {
      make_tensor(random_values(kRank * kHidden, DType::kFloat64, -0.3, 0.3, 1), Shape{kRank, kHidden}, DType::kFloat64),
      make_tensor(random_values(kHeads * kHeadDim * kRank, DType::kFloat64, -0.3, 0.3, 2),
                  Shape{kHeads * kHeadDim, kRank}, DType::kFloat64),
      make_tensor(random_values(kRank * kHidden, DType::kFloat64, -0.3, 0.3, 3), Shape{kRank, kHidden}, DType::kFloat64),
      make_tensor(random_values(kKvHeads * kHeadDim * kRank, DType::kFloat64, -0.3, 0.3, 4),
                  Shape{kKvHeads * kHeadDim, kRank}, DType::kFloat64),
      make_tensor(random_values(kRank * kFfn, DType::kFloat64, -0.3, 0.3, 5), Shape{kRank, kFfn}, DType::kFloat64),
      make_tensor(random_values(kHidden * kRank, DType::kFloat64, -0.3, 0.3, 6), Shape{kHidden, kRank}, DType::kFloat64),
  };
  // The adapters change the loss (so the check below is not of a constant function).
  const double base = loss({}).item<double>(), adapted = loss(lora).item<double>();
  EXPECT_GT(std::abs(adapted - base), 1e-3);
  gradcheck([&](const std::vector<Tensor>& x) { return loss(x); }, lora, {0, 1, 2, 3, 4, 5}, 1e-6, 1e-6,
            "llama LoRA over q8_0");
}

}  // namespace
}  // namespace spore::test
