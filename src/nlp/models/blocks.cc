// The shared blocks of the decoder layer (blocks.h, NOTE [Model families]).
#include "nlp/models/blocks.h"

#include "nlp/models/family.h"
#include "spore/error.h"
#include "spore/ops.h"

namespace spore::nlp::models {

namespace {

// A norm weight with the family's offset folded in once at load (weight + offset).
Tensor norm_weight(WeightStore& ws, const std::string& name, int64_t size, const NormOptions& o) {
  const Tensor w = ws.vector(name, size);
  return o.offset == 0 ? w : add(w, o.offset);
}

// llama.cpp's converter splits deepseek2's kv_b per head into k_b (transposed: [heads, latent,
// nope]) and v_b ([heads, v, latent]) for its absorbed attention; the expanded attention here
// takes them joined back, per head [k_nope | v] rows over the latent (float32, made once).
Weight joined_kv_b(WeightStore& ws, const std::string& k_b, const std::string& v_b, int64_t heads, int64_t nope,
                   int64_t dv, int64_t latent) {
  const std::vector<Weight> k = ws.stacked(k_b, heads, latent, nope), v = ws.stacked(v_b, heads, dv, latent);
  std::vector<Tensor> rows;
  for (int64_t h = 0; h < heads; ++h) {
    rows.push_back(transpose(weight_to_float(k[static_cast<size_t>(h)]), 0, 1).contiguous());
    rows.push_back(weight_to_float(v[static_cast<size_t>(h)]));
  }
  return Weight{concat(rows, 0).contiguous(), GgmlType::kF32, heads * (nope + dv), latent};
}

}  // namespace

LayerWeights load_layer(WeightStore& ws, const WeightNames& n, bool gguf, int64_t l, const LayerSpec& spec,
                        const BlockDims& d) {
  auto nm = [&](const TensorName& t) { return layer_name(gguf ? t.gguf : t.hf, l); };
  const int64_t H = d.hidden, D = d.head_dim, Hq = d.heads, Hkv = d.kv_heads, Dv = d.v_head_dim, F = d.ffn;
  const AttentionOptions& a = spec.attention;
  LayerWeights w;
  if (spec.pre_norms) {
    w.attn_norm = norm_weight(ws, nm(n.attn_norm), H, spec.norm);
    w.ffn_norm = norm_weight(ws, nm(n.ffn_norm), H, spec.norm);
  }
  if (spec.post_norms) {
    w.post_attn_norm = norm_weight(ws, nm(n.post_attn_norm), H, spec.norm);
    w.post_ffn_norm = norm_weight(ws, nm(n.post_ffn_norm), H, spec.norm);
  }
  if (a.latent.kv_lora_rank > 0) {
    const LatentOptions& m = a.latent;
    if (m.q_lora_rank > 0) {
      w.q_a = ws.matrix(nm(n.q_a), m.q_lora_rank, H);
      w.q_a_norm = ws.vector(nm(n.q_a_norm), m.q_lora_rank);
      w.q_b = ws.matrix(nm(n.q_b), Hq * D, m.q_lora_rank);
    } else {  // DeepSeek-V2-Lite: q straight from x
      w.q = ws.matrix(nm(n.q), Hq * D, H);
    }
    w.kv_a = ws.matrix(nm(n.kv_a), m.kv_lora_rank + m.rope_dim, H);
    w.kv_a_norm = ws.vector(nm(n.kv_a_norm), m.kv_lora_rank);
    if (gguf && !ws.contains(nm(n.kv_b)) && !n.k_b.gguf.empty() && ws.contains(nm(n.k_b)))
      w.kv_b = joined_kv_b(ws, nm(n.k_b), nm(n.v_b), Hq, m.nope_dim, Dv, m.kv_lora_rank);
    else
      w.kv_b = ws.matrix(nm(n.kv_b), Hq * (m.nope_dim + Dv), m.kv_lora_rank);
  } else if (a.fused_qkv) {
    w.qkv = ws.matrix(nm(n.qkv), (Hq + 2 * Hkv) * D, H);
  } else {
    w.q = ws.matrix(nm(n.q), Hq * D, H);
    w.k = ws.matrix(nm(n.k), Hkv * D, H);
    w.v = ws.matrix(nm(n.v), Hkv * D, H);
  }
  w.o = ws.matrix(nm(n.o), H, Hq * Dv);
  if (a.bias) {
    w.q_bias = ws.vector(nm(n.q_bias), Hq * D);
    w.k_bias = ws.vector(nm(n.k_bias), Hkv * D);
    w.v_bias = ws.vector(nm(n.v_bias), Hkv * D);
  }
  if (a.qk_norm) {
    const NormOptions qk{a.qk_norm_eps, a.qk_norm_offset};
    w.q_norm = norm_weight(ws, nm(n.q_norm), a.qk_norm_full ? Hq * D : D, qk);
    w.k_norm = norm_weight(ws, nm(n.k_norm), a.qk_norm_full ? Hkv * D : D, qk);
  }
  if (spec.moe.experts > 0) {
    w.moe = load_moe(ws, n, gguf, l, spec.moe, H);
    return w;
  }
  if (spec.mlp.fused_gate_up) {
    w.gate_up = ws.matrix(nm(n.gate_up), 2 * F, H);
  } else {
    if (spec.mlp.gated) w.gate = ws.matrix(nm(n.gate), F, H);
    w.up = ws.matrix(nm(n.up), F, H);
  }
  w.down = ws.matrix(nm(n.down), H, F);
  return w;
}

Tensor norm(const Tensor& x, const Tensor& weight, const NormOptions& o, bool ggml) {
  return rms_norm(x, weight, o.eps, ggml);
}

namespace {

// q/k/v projections (+ biases, + per-head norms), then the rope on q and k.
void plain_qkv(const LayerWeights& w, const AttentionOptions& o, const BlockDims& d, const Tensor& x, int64_t N,
               const Tensor& pos, const Tensor& inv, const RopeOptions& ro, bool ggml, Tensor& q, Tensor& k,
               Tensor& v, const lora::LayerLora& lora) {
  using P = LoraProjection;
  if (o.fused_qkv) {  // columns [q | k | v] of one product
    const Tensor qkv = lora.apply(x, linear(x, w.qkv, ggml), P::kQkv);
    const int64_t nq = d.heads * d.head_dim, nk = d.kv_heads * d.head_dim;
    q = slice(qkv, 1, 0, nq).contiguous();
    k = slice(qkv, 1, nq, nq + nk).contiguous();
    v = slice(qkv, 1, nq + nk, nq + 2 * nk).contiguous();
  } else {
    q = lora.apply(x, linear(x, w.q, ggml), P::kQ);
    k = lora.apply(x, linear(x, w.k, ggml), P::kK);
    v = lora.apply(x, linear(x, w.v, ggml), P::kV);
  }
  if (w.q_bias.defined()) {
    q = add(q, w.q_bias);
    k = add(k, w.k_bias);
    v = add(v, w.v_bias);
  }
  if (o.qk_norm && o.qk_norm_full) {  // olmo2: over the whole projection, before the heads split
    q = rms_norm(q, w.q_norm, o.qk_norm_eps, ggml);
    k = rms_norm(k, w.k_norm, o.qk_norm_eps, ggml);
  }
  q = reshape(q, {1, N, d.heads, d.head_dim});
  k = reshape(k, {1, N, d.kv_heads, d.head_dim});
  v = reshape(v, {1, N, d.kv_heads, d.head_dim});
  if (o.qk_norm && !o.qk_norm_full) {
    q = rms_norm(q, w.q_norm, o.qk_norm_eps, ggml);
    k = rms_norm(k, w.k_norm, o.qk_norm_eps, ggml);
  }
  q = rope(q, pos, inv, ro);
  k = rope(k, pos, inv, ro);
}

// Multi-head latent attention: q = q_b(norm(q_a x)) per head [nope | rope]; kv_a x = [latent |
// shared rope key]; kv_b(norm(latent)) per head [k_nope | v]; k = [k_nope | rope key] per head.
// The cache holds the expanded per-head k and v (not the latent): the attention op reads them.
void latent_qkv(const LayerWeights& w, const LatentOptions& m, const BlockDims& d, const Tensor& x, int64_t N,
                const Tensor& pos, const Tensor& inv, const RopeOptions& rope_options, Tensor& q, Tensor& k, Tensor& v) {
  RopeOptions ro = rope_options;
  ro.interleaved = ro.interleaved || m.interleaved_rope;
  const int64_t H = d.heads, Dn = m.nope_dim, R = m.rope_dim, Dv = d.v_head_dim, C = m.kv_lora_rank;
  const Tensor q_flat = m.q_lora_rank > 0 ? linear(rms_norm(linear(x, w.q_a), w.q_a_norm, m.norm_eps), w.q_b) : linear(x, w.q);
  const Tensor qh = reshape(q_flat, {1, N, H, Dn + R});
  const Tensor q_rot = rope(slice(qh, 3, Dn, Dn + R).contiguous(), pos, inv, ro);
  q = concat({slice(qh, 3, 0, Dn), q_rot}, 3);
  const Tensor ckv = linear(x, w.kv_a);  // [N, C + R]
  const Tensor k_rot = rope(reshape(slice(ckv, 1, C, C + R).contiguous(), {1, N, 1, R}), pos, inv, ro);
  const Tensor kv =
      reshape(linear(rms_norm(slice(ckv, 1, 0, C).contiguous(), w.kv_a_norm, m.norm_eps), w.kv_b), {1, N, H, Dn + Dv});
  k = concat({slice(kv, 3, 0, Dn), expand(k_rot, {1, N, H, R})}, 3);
  v = slice(kv, 3, Dn, Dn + Dv);
}

}  // namespace

void attention_qkv(const LayerWeights& w, const AttentionOptions& o, const BlockDims& d, const Tensor& x, int64_t N,
                   const Tensor& pos, const Tensor& inv, const RopeOptions& ro, bool ggml, Tensor& q, Tensor& k,
                   Tensor& v, const lora::LayerLora& lora) {
  if (o.latent.kv_lora_rank > 0)
    latent_qkv(w, o.latent, d, x, N, pos, inv, ro, q, k, v);
  else
    plain_qkv(w, o, d, x, N, pos, inv, ro, ggml, q, k, v, lora);
}

Tensor mlp(const LayerWeights& w, const MlpOptions& o, const Tensor& y, bool ggml, const lora::LayerLora& lora) {
  using P = LoraProjection;
  auto act = [&](const Tensor& t) { return o.activation == Activation::kSilu ? silu(t) : gelu(t, true); };
  auto down = [&](const Tensor& h) { return lora.apply(h, linear(h, w.down, ggml), P::kDown); };
  if (o.fused_gate_up) {  // columns [gate | up] of one product
    const Tensor gu = lora.apply(y, linear(y, w.gate_up, ggml), P::kGateUp);
    const int64_t F = gu.size(1) / 2;
    return down(mul(act(slice(gu, 1, 0, F).contiguous()), slice(gu, 1, F, 2 * F).contiguous()));
  }
  const Tensor up = lora.apply(y, linear(y, w.up, ggml), P::kUp);
  const Tensor hidden = o.gated ? mul(act(lora.apply(y, linear(y, w.gate, ggml), P::kGate)), up) : act(up);
  return down(hidden);
}

}  // namespace spore::nlp::models
