// The shared blocks a family composes its decoder layer from (NOTE [Model families]): a norm, an
// attention and an MLP, each with the options the families differ by. A family's file says which
// options its layers take (Family::decoder); the decoder (decoder.cc) loads each block's weights
// by the family's names and runs it. Every step is a registry op; with every option at its
// default the blocks are the llama decoder, op for op (the greedy parity with llama.cpp is exact).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nlp/lora/lora_batch.h"
#include "nlp/model_internal.h"
#include "nlp/models/moe.h"
#include "spore/llm.h"
#include "spore/tensor.h"

namespace spore::nlp::models {

struct WeightNames;

// RMSNorm: x / rms(x) * (weight + offset). Gemma stores weight - 1 (offset 1).
struct NormOptions {
  double eps = 1e-6;
  double offset = 0;
};

// Multi-head latent attention (DeepSeek-V2 / MiniCPM3): q = q_b(norm(q_a x)); kv_a x = [latent |
// shared rope key]; kv_b(norm(latent)) = per head [k_nope | v]. kv_lora_rank 0: plain attention;
// q_lora_rank 0 with a latent kv: q from its own projection (DeepSeek-V2-Lite).
struct LatentOptions {
  int64_t q_lora_rank = 0, kv_lora_rank = 0;
  int64_t nope_dim = 0, rope_dim = 0;  // per-head q/k features without and with the rope
  double norm_eps = 1e-6;              // the low-rank norms' eps (not rms_norm_eps in transformers)
  bool interleaved_rope = false;       // the rope on adjacent pairs (deepseek2, HF and GGUF alike)
};

struct AttentionOptions {
  bool bias = false;           // q/k/v projection biases (qwen2)
  bool qk_norm = false;        // per-head RMSNorm of q and k before the rope (qwen3)
  double qk_norm_eps = 1e-6;
  double qk_norm_offset = 0;   // the q/k norms' weight + offset (gemma3: 1)
  bool qk_norm_full = false;   // q/k norm over the whole projection, weights [heads * head_dim] (olmo2)
  bool fused_qkv = false;      // one [q | k | v] projection (phi3's qkv_proj)
  double rope_theta = 0;       // > 0: this layer's own rope base, without scaling (gemma3's sliding layers)
  int64_t sliding_window = 0;  // > 0: a query sees the last `sliding_window` keys (mistral)
  double softcap = 0;          // > 0: scores soft-capped (gemma2)
  double scale = 0;            // 0: 1 / sqrt(head_dim)
  LatentOptions latent;
};

enum class Activation { kSilu, kGeluTanh };

struct MlpOptions {
  Activation activation = Activation::kSilu;
  bool gated = true;  // down(act(gate x) * up x); false: down(act(up x))
  bool fused_gate_up = false;  // one [gate | up] projection (phi3's gate_up_proj)
};

struct LayerSpec {
  NormOptions norm;
  // Gemma 2's sandwich: the attention's and the MLP's outputs are normed again before their
  // residual adds (post_attention_norm, post_ffw_norm).
  bool post_norms = false;
  bool pre_norms = true;  // false: no norm before the attention and the MLP (olmo2 has post_norms only)
  AttentionOptions attention;
  MlpOptions mlp;
  MoeOptions moe;  // experts > 0: the MLP is a mixture of experts (moe.h)
};

struct DecoderSpec {
  std::vector<LayerSpec> layers;  // one per layer (gemma2 alternates sliding-window layers)
  NormOptions final_norm;
  double embed_scale = 1;     // embeddings times this (minicpm3's scale_emb)
  double residual_scale = 1;  // each residual branch times this (minicpm3's scale_depth / sqrt(L))
  double head_scale = 1;      // the final hidden state times this before the head (minicpm3)
  double logit_softcap = 0;   // > 0: logits become cap * tanh(logits / cap) (gemma2)
};

// One layer's weights, loaded by the family's names for the blocks its spec asks for.
struct LayerWeights {
  Tensor attn_norm, ffn_norm, q_norm, k_norm, q_bias, k_bias, v_bias;
  Tensor post_attn_norm, post_ffn_norm;  // post_norms
  Weight q, k, v, o, gate, up, down;
  Weight q_a, q_b, kv_a, kv_b;  // latent attention
  Weight qkv, gate_up;          // fused projections
  Tensor q_a_norm, kv_a_norm;
  MoeWeights moe;  // a mixture-of-experts layer's, in place of gate/up/down
};

// Shapes the blocks need from the config.
struct BlockDims {
  int64_t hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, v_head_dim = 0, ffn = 0;
};

// Reads the layer's tensors (`gguf`: GGUF names) with the shapes the spec implies; kFormat /
// kShape from the store naming the tensor.
LayerWeights load_layer(WeightStore& ws, const WeightNames& names, bool gguf, int64_t layer, const LayerSpec& spec,
                        const BlockDims& d);

Tensor norm(const Tensor& x, const Tensor& weight, const NormOptions& o, bool ggml);

// q [1, N, Hq, D], k [1, N, Hkv, D], v [1, N, Hkv, Dv] from the normed x [N, hidden], the rope
// applied to q and k (positions `pos`, frequencies `inv`). `lora`: the batch's adapters on the
// q/k/v (or fused qkv) products (NOTE [LoRA adapters]; the latent attention takes none).
void attention_qkv(const LayerWeights& w, const AttentionOptions& o, const BlockDims& d, const Tensor& x, int64_t N,
                   const Tensor& pos, const Tensor& inv, const RopeOptions& ro, bool ggml, Tensor& q, Tensor& k,
                   Tensor& v, const lora::LayerLora& lora = {});

Tensor mlp(const LayerWeights& w, const MlpOptions& o, const Tensor& y, bool ggml, const lora::LayerLora& lora = {});

}  // namespace spore::nlp::models
