// The training forward's blocks (train_blocks.h, NOTE [LoRA training]).
#include "nlp/finetune/train_blocks.h"

#include "spore/error.h"
#include "spore/ops.h"

namespace spore::nlp::lora_blocks {

namespace {

// Dropout's keep mask (1 kept, 0 dropped) for x, or an undefined tensor when there is none (key 0
// is evaluation, or no dropout). The mask is a pure function of (key, layer, target), so the
// recomputation of gradient checkpointing draws the same.
Tensor keep_mask(const Tensor& x, const LayerAdapters& a, const std::string& target) {
  if (a.dropout <= 0 || a.dropout_key == 0) return Tensor();
  uint64_t seed = a.dropout_key * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(a.layer) * 1315423911ull;
  for (char c : target) seed = seed * 131 + static_cast<unsigned char>(c);
  const auto dims = x.shape().dims();
  const Tensor u = random_uniform(std::vector<int64_t>(dims.begin(), dims.end()), seed, 0, 1, x.dtype());
  return cast(ge(u, scalar_like(u, a.dropout)), x.dtype());
}

}  // namespace

// x [N, in] times w^T in bfloat16 (NOTE [bf16 LoRA training]): a bfloat16 weight as oneDNN's
// native bf16 GEMM takes it, x rounded to bfloat16 on the way in, the result widened to float32
// on the way out (the casts carry the gradient back to x). Quantised weights stay matmul_q's.
Tensor bf16_linear(const Tensor& x, const Weight& w) {
  if (w.qtype != GgmlType::kBF16 || w.data.dtype() != DType::kBFloat16) return linear(x, w);
  return cast(matmul(cast(x, DType::kBFloat16), transpose(w.data, 0, 1)), DType::kFloat32);
}

Tensor lora_linear(const Tensor& x, const Weight& w, const LayerAdapters& a, const std::string& target) {
  const Tensor y = a.bf16 ? bf16_linear(x, w) : linear(x, w);
  const auto it = a.ab.find(target);
  if (it == a.ab.end()) return y;
  const auto& [A, B] = it->second;
  if (a.bf16) {
    // The adapter's product on bfloat16 copies of its float32 masters (the casts' gradients bring
    // dA and dB back to float32).
    const Tensor keep = keep_mask(x, a, target);
    const double factor = keep.defined() ? a.scaling / (1.0 - a.dropout) : a.scaling;
    const Tensor xb = cast(keep.defined() ? mul(x, keep) : x, DType::kBFloat16);
    const Tensor low = mul(matmul(xb, transpose(cast(A, DType::kBFloat16), 0, 1)), factor);
    return add(y, cast(matmul(low, transpose(cast(B, DType::kBFloat16), 0, 1)), DType::kFloat32));
  }
  // PEFT's lora_B(lora_A(dropout(x))) * scaling, with inverted dropout (torch.nn.Dropout: kept
  // values scaled by 1 / (1 - p)). Both factors are applied to the rank-r intermediate rather
  // than to x [N, in] or the result [N, out]: the same product, two full-size passes (and a
  // saved [N, in] tensor per adapter) fewer.
  const Tensor keep = keep_mask(x, a, target);
  const double factor = keep.defined() ? a.scaling / (1.0 - a.dropout) : a.scaling;
  const Tensor low = mul(matmul(keep.defined() ? mul(x, keep) : x, transpose(A, 0, 1)), factor);
  return add(y, matmul(low, transpose(B, 0, 1)));
}

Tensor train_attention(const models::LayerWeights& w, const models::AttentionOptions& o, const models::BlockDims& d,
                       const Tensor& x, const Tensor& pos, const RopeTables& tables, double default_scale,
                       const LayerAdapters& a, const std::vector<int64_t>& segments) {
  const int64_t N = x.size(0);
  Tensor q = lora_linear(x, w.q, a, "q_proj");
  Tensor k = lora_linear(x, w.k, a, "k_proj");
  Tensor v = lora_linear(x, w.v, a, "v_proj");
  if (w.q_bias.defined()) {
    q = add(q, w.q_bias);
    k = add(k, w.k_bias);
    v = add(v, w.v_bias);
  }
  if (o.qk_norm && o.qk_norm_full) {
    q = rms_norm(q, w.q_norm, o.qk_norm_eps);
    k = rms_norm(k, w.k_norm, o.qk_norm_eps);
  }
  q = reshape(q, {1, N, d.heads, d.head_dim});
  k = reshape(k, {1, N, d.kv_heads, d.head_dim});
  v = reshape(v, {1, N, d.kv_heads, d.head_dim});
  if (o.qk_norm && !o.qk_norm_full) {
    q = rms_norm(q, w.q_norm, o.qk_norm_eps);
    k = rms_norm(k, w.k_norm, o.qk_norm_eps);
  }
  q = rope(q, pos, tables.inv, tables.options);
  k = rope(k, pos, tables.inv, tables.options);
  auto heads_first = [](const Tensor& t) { return transpose(t, 1, 2).contiguous(); };
  const double scale = o.scale > 0 ? o.scale : default_scale;
  // k and v go to attention directly (no kv_cache_write, which carries no gradient).
  auto attend = [&](const Tensor& qs, const Tensor& ks, const Tensor& vs) {
    return attention(qs, ks, vs, scale, 0, false, o.sliding_window, o.softcap);
  };
  Tensor att;  // [1, Hq, N, Dv]
  if (segments.size() <= 1) {
    att = attend(heads_first(q), heads_first(k), heads_first(v));
  } else {
    // Causal attention per packed sequence: the block-diagonal mask without materialising it.
    // Split along the sequence axis of [1, N, heads, D], where each part is a contiguous block.
    const std::vector<Tensor> qs = split(q, segments, 1), ks = split(k, segments, 1), vs = split(v, segments, 1);
    std::vector<Tensor> parts;
    parts.reserve(segments.size());
    for (size_t i = 0; i < segments.size(); ++i)
      parts.push_back(attend(heads_first(qs[i]), heads_first(ks[i]), heads_first(vs[i])));
    att = concat(parts, 2);
  }
  const Tensor flat = reshape(transpose(att, 1, 2).contiguous(), {N, d.heads * d.v_head_dim});
  return lora_linear(flat, w.o, a, "o_proj");
}

Tensor train_mlp(const models::LayerWeights& w, const models::MlpOptions& o, const Tensor& y, const LayerAdapters& a) {
  auto act = [&](const Tensor& t) { return o.activation == models::Activation::kSilu ? silu(t) : gelu(t, true); };
  const Tensor up = lora_linear(y, w.up, a, "up_proj");
  const Tensor hidden = o.gated ? mul(act(lora_linear(y, w.gate, a, "gate_proj")), up) : act(up);
  return lora_linear(hidden, w.down, a, "down_proj");
}

}  // namespace spore::nlp::lora_blocks
