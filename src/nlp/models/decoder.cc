// The shared decoder of every family (NOTE [LLM engine], NOTE [Model families] in docs/design.md):
// embedding, then per layer the blocks the family's DecoderSpec composes (blocks.h): norm ->
// q/k/v -> rope -> KV cache write -> attention over the slot's cache -> output projection ->
// residual, norm -> MLP -> residual; then the final norm and the LM head. Every step is a
// registry op. Matrix products run once over the tokens of all chunks; attention runs per chunk
// on its slot. Nothing here names a family.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "nlp/lora/lora_batch.h"
#include "nlp/model_internal.h"
#include "nlp/models/family.h"
#include "spore/error.h"
#include "spore/llm.h"
#include "spore/ops.h"

namespace spore::nlp {

namespace {

using models::Family;
using models::layer_name;

class DecoderLM final : public CausalLM {
 public:
  DecoderLM(const ModelConfig& config, WeightStore& ws, bool gguf, bool ggml) : cfg_(config), ggml_(ggml) {
    const Family* fam = models::find_family(cfg_.family);
    if (!fam) throw Error(ErrorCode::kUnsupported, "model family " + cfg_.family + " is not built in");
    interleaved_ = gguf && fam->gguf_interleaved_rope;
    spec_ = fam->decoder(cfg_);
    if (static_cast<int64_t>(spec_.layers.size()) != cfg_.num_layers)
      throw Error(ErrorCode::kInternal, "family " + fam->name + " composed " + std::to_string(spec_.layers.size()) +
                                            " layers for a config of " + std::to_string(cfg_.num_layers));
    for (const models::LayerSpec& l : spec_.layers) {
      latent_ = latent_ || l.attention.latent.kv_lora_rank > 0;
      if (ggml_ && (l.attention.sliding_window > 0 || l.attention.softcap > 0 || spec_.logit_softcap > 0 ||
                    l.attention.rope_theta > 0))
        throw Error(ErrorCode::kUnsupported, cfg_.source + ": " + fam->name +
                                                 "'s sliding-window / soft-capped attention has no ggml numerics; "
                                                 "load it with the reference numerics (--numerics reference)");
    }
    const auto& n = fam->names;
    auto nm = [gguf](const models::TensorName& t, int64_t layer) {
      return layer_name(gguf ? t.gguf : t.hf, layer);
    };
    const int64_t H = cfg_.hidden_size, V = cfg_.vocab_size;
    dims_ = {H, cfg_.num_heads, cfg_.num_kv_heads, cfg_.head_dim, cfg_.v_head_dim, cfg_.intermediate_size};
    embed_ = ws.matrix(nm(n.embed, 0), V, H);
    final_norm_ = ws.vector(nm(n.final_norm, 0), H);
    if (spec_.final_norm.offset != 0) final_norm_ = add(final_norm_, spec_.final_norm.offset);
    const std::string head = nm(n.lm_head, 0);
    // Tied embeddings: no head tensor (GGUF drops it; HF configs say tie_word_embeddings).
    if (ws.contains(head) && !(cfg_.tie_word_embeddings && !gguf))
      lm_head_ = ws.matrix(head, V, H);
    else if (!cfg_.tie_word_embeddings && !ws.contains(head))
      lm_head_ = ws.matrix(head, V, H);  // throws naming the missing head
    else
      lm_head_ = embed_;
    for (int64_t l = 0; l < cfg_.num_layers; ++l)
      layers_.push_back(models::load_layer(ws, n, gguf, l, spec_.layers[static_cast<size_t>(l)], dims_));
    // llama.cpp stores Llama 3's scaled frequencies as divisors (rope_freqs.weight).
    // MiniCPM3's LongRoPE factors are tensors in GGUF (rope_factors_short / _long).
    if (gguf && ws.contains("rope_freqs.weight")) rope_div_short_ = rope_div_long_ = ws.vector("rope_freqs.weight", cfg_.rope_dim / 2);
    if (gguf && ws.contains("rope_factors_short.weight")) rope_div_short_ = ws.vector("rope_factors_short.weight", cfg_.rope_dim / 2);
    if (gguf && ws.contains("rope_factors_long.weight")) rope_div_long_ = ws.vector("rope_factors_long.weight", cfg_.rope_dim / 2);
    // ggml numerics: ggml's own angles (position * theta_scale^i, NOTE [LLM numerics]) where the
    // table is plain theta (with llama3's divisors as factors); scaled schemes keep HF's table.
    if (ggml_ && cfg_.rope_scaling.type.empty() && !latent_) {
      ggml_theta_scale_ = std::pow(static_cast<float>(cfg_.rope_theta), -2.0f / static_cast<float>(cfg_.rope_dim));
      std::vector<float> factors(static_cast<size_t>(cfg_.rope_dim / 2), 1.0f);
      if (rope_div_short_.defined()) {
        const auto f = rope_div_short_.to_vector<float>();
        for (size_t i = 0; i < factors.size(); ++i) factors[i] = 1.0f / f[i];
      }
      ggml_factors_ = Tensor::from_vector(factors, Shape{static_cast<int64_t>(factors.size())});
    }
    short_inv_ = make_inv_freq(1, rope_div_short_, &short_scale_);
    // Layers with a rope base of their own (gemma3's sliding layers): plain frequencies of that base.
    for (const models::LayerSpec& l : spec_.layers)
      if (const double theta = l.attention.rope_theta; theta > 0 && !layer_inv_.count(theta)) {
        ModelConfig own = cfg_;
        own.rope_theta = theta;
        own.rope_scaling = {};
        const std::vector<float> inv = rope_inv_freq(own, 1, nullptr);
        layer_inv_[theta] = Tensor::from_vector(inv, Shape{static_cast<int64_t>(inv.size())});
      }
    long_inv_ = make_inv_freq(cfg_.max_position_embeddings + 1, rope_div_long_, &long_scale_);
    memory_ = ws.memory();
  }

  const ModelConfig& config() const override { return cfg_; }

  uint64_t kv_bytes_per_token(DType dtype) const override {
    return static_cast<uint64_t>(cfg_.num_layers) * static_cast<uint64_t>(cfg_.num_kv_heads) *
           static_cast<uint64_t>(cfg_.head_dim + cfg_.v_head_dim) * dtype_size(dtype);
  }

  std::unique_ptr<KvCache> make_cache(int64_t slots, int64_t context, DType dtype) const override {
    if (context == 0) context = cfg_.max_position_embeddings;
    if (slots <= 0 || context <= 0)
      throw Error(ErrorCode::kValue, "make_cache: slots and context must be positive, got " + std::to_string(slots) +
                                         " and " + std::to_string(context));
    if (context > cfg_.max_position_embeddings)
      throw Error(ErrorCode::kValue, "make_cache: a context of " + std::to_string(context) + " exceeds the model's " +
                                         std::to_string(cfg_.max_position_embeddings) + " positions (" + cfg_.source + ")");
    if (!(dtype == DType::kFloat16 || dtype == DType::kBFloat16 || dtype == DType::kFloat32))
      throw Error(ErrorCode::kDType, std::string("make_cache: the cache dtype must be float16, bfloat16 or float32, got ") +
                                         dtype_name(dtype));
    std::vector<Tensor> keys, values;
    for (int64_t l = 0; l < cfg_.num_layers; ++l) {
      keys.push_back(zeros({slots, cfg_.num_kv_heads, context, cfg_.head_dim}, dtype));
      values.push_back(zeros({slots, cfg_.num_kv_heads, context, cfg_.v_head_dim}, dtype));
    }
    return std::make_unique<KvCache>(std::move(keys), std::move(values));
  }

  MemoryReport weight_memory() const override { return memory_; }

  Tensor forward(std::span<const SequenceChunk> chunks, KvCache& cache) override { return run(chunks, cache, false); }
  Tensor forward_hidden(std::span<const SequenceChunk> chunks, KvCache& cache) override { return run(chunks, cache, true); }

 private:
  Tensor run(std::span<const SequenceChunk> chunks, KvCache& cache, bool hidden_only) {
    if (chunks.empty()) throw Error(ErrorCode::kValue, "forward: no sequence chunks");
    if (cache.layers() != cfg_.num_layers || cache.keys(0).size(1) != cfg_.num_kv_heads ||
        cache.keys(0).size(3) != cfg_.head_dim || cache.values(0).size(3) != cfg_.v_head_dim)
      throw Error(ErrorCode::kValue, "forward: the KV cache was not made by this model (make_cache)");
    const int64_t context = cache.context(), slots = cache.slots();
    std::vector<int32_t> ids;
    std::vector<int64_t> positions, keep;
    std::set<int32_t> seen;
    int64_t max_end = 0;
    for (size_t c = 0; c < chunks.size(); ++c) {
      const auto& ch = chunks[c];
      const std::string which = "forward: chunk " + std::to_string(c) + " (slot " + std::to_string(ch.slot) + ")";
      if (ch.slot < 0 || ch.slot >= slots)
        throw Error(ErrorCode::kValue, which + ": the cache has " + std::to_string(slots) + " slot(s)");
      if (!seen.insert(ch.slot).second) throw Error(ErrorCode::kValue, which + ": the slot appears twice in one call");
      const int64_t len = static_cast<int64_t>(ch.tokens.size());
      if (len == 0) throw Error(ErrorCode::kValue, which + ": no tokens");
      if (ch.position < 0 || ch.position > context - len)
        throw Error(ErrorCode::kValue, which + ": positions " + std::to_string(ch.position) + ".." +
                                           std::to_string(ch.position + len - 1) + " run past the context of " +
                                           std::to_string(context) + " (a longer cache, or a shorter prompt)");
      for (int64_t i = 0; i < len; ++i) {
        const int32_t id = ch.tokens[static_cast<size_t>(i)];
        if (id < 0 || id >= cfg_.vocab_size)
          throw Error(ErrorCode::kValue, which + ": token id " + std::to_string(id) + " at index " + std::to_string(i) +
                                             " is outside the vocabulary [0, " + std::to_string(cfg_.vocab_size) + ")");
        ids.push_back(id);
        positions.push_back(ch.position + i);
        if (ch.all_logits || i == len - 1) keep.push_back(static_cast<int64_t>(ids.size()) - 1);
      }
      max_end = std::max(max_end, ch.position + len);
    }
    const int64_t N = static_cast<int64_t>(ids.size());
    const int64_t D = cfg_.head_dim, Hq = cfg_.num_heads, Dv = cfg_.v_head_dim;
    const Tensor pos = Tensor::from_vector(positions, Shape{N});
    // LongRoPE switches to its long factors once a sequence passes the original context (as HF).
    const bool long_rope = cfg_.rope_scaling.type == "longrope" &&
                           max_end > (cfg_.rope_scaling.original_max_position > 0 ? cfg_.rope_scaling.original_max_position
                                                                                   : cfg_.max_position_embeddings);
    RopeOptions ro;
    ro.seq_axis = -3;  // [1, N, heads, D]
    ro.interleaved = interleaved_;
    ro.scale = long_rope ? long_scale_ : short_scale_;
    ro.ggml_theta_scale = ggml_theta_scale_;
    const Tensor& inv = ggml_factors_.defined() ? ggml_factors_ : long_rope ? long_inv_ : short_inv_;
    const double default_scale = 1.0 / std::sqrt(static_cast<double>(D));

    const lora::LoraBatch adapters(chunks, *this);  // NOTE [LoRA adapters]
    Tensor h = embed_rows(embed_, ids);  // [N, hidden]
    if (spec_.embed_scale != 1.0) h = mul(h, spec_.embed_scale);
    for (int64_t l = 0; l < cfg_.num_layers; ++l) {
      const models::LayerWeights& L = layers_[static_cast<size_t>(l)];
      const models::LayerSpec& S = spec_.layers[static_cast<size_t>(l)];
      const lora::LayerLora lora{&adapters, l};
      const Tensor x = S.pre_norms ? models::norm(h, L.attn_norm, S.norm, ggml_) : h;
      Tensor q, k, v;  // [1, N, heads, D] (v: Dv), rope applied
      if (S.attention.rope_theta > 0) {
        RopeOptions own = ro;
        own.scale = 1;
        models::attention_qkv(L, S.attention, dims_, x, N, pos, layer_inv_.at(S.attention.rope_theta), own, ggml_, q, k, v,
                              lora);
      } else {
        models::attention_qkv(L, S.attention, dims_, x, N, pos, inv, ro, ggml_, q, k, v, lora);
      }
      const double attn_scale = S.attention.scale > 0 ? S.attention.scale : default_scale;
      const Tensor& kc = cache.keys(l);
      const Tensor& vc = cache.values(l);
      std::vector<Tensor> outs;
      int64_t off = 0;
      for (const auto& ch : chunks) {
        const int64_t len = static_cast<int64_t>(ch.tokens.size());
        auto heads_first = [&](const Tensor& t) { return transpose(slice(t, 1, off, off + len), 1, 2).contiguous(); };
        const Tensor ks = slice(kc, 0, ch.slot, ch.slot + 1), vs = slice(vc, 0, ch.slot, ch.slot + 1);
        kv_cache_write(ks, heads_first(k), ch.position);
        kv_cache_write(vs, heads_first(v), ch.position);
        const Tensor a = attention(heads_first(q), ks, vs, attn_scale, ch.position, ggml_, S.attention.sliding_window,
                                   S.attention.softcap, ch.rows_as_decode);  // [1, Hq, len, Dv]
        outs.push_back(reshape(transpose(a, 1, 2).contiguous(), {len, Hq * Dv}));
        off += len;
      }
      const Tensor attn = outs.size() == 1 ? outs[0] : concat(outs, 0);
      Tensor attn_out = lora.apply(attn, lin(attn, L.o), LoraProjection::kO);
      if (S.post_norms) attn_out = models::norm(attn_out, L.post_attn_norm, S.norm, ggml_);
      h = residual(h, attn_out);
      const Tensor y = S.pre_norms ? models::norm(h, L.ffn_norm, S.norm, ggml_) : h;
      Tensor mlp_out = S.moe.experts > 0 ? models::moe(L.moe, S.moe, y, ggml_) : models::mlp(L, S.mlp, y, ggml_, lora);
      if (S.post_norms) mlp_out = models::norm(mlp_out, L.post_ffn_norm, S.norm, ggml_);
      h = residual(h, mlp_out);
    }
    if (static_cast<int64_t>(keep.size()) != N) h = index_select(h, 0, Tensor::from_vector(keep, Shape{(int64_t)keep.size()}));
    Tensor out = models::norm(h, final_norm_, spec_.final_norm, ggml_);
    if (hidden_only) return out;
    if (spec_.head_scale != 1.0) out = mul(out, spec_.head_scale);
    Tensor logits = lin(out, lm_head_);
    if (spec_.logit_softcap > 0) logits = mul(tanh(mul(logits, 1.0 / spec_.logit_softcap)), spec_.logit_softcap);
    return logits;
  }

  Tensor make_inv_freq(int64_t context, const Tensor& divisors, double* scale) const {
    std::vector<float> inv = rope_inv_freq(cfg_, context, scale);
    if (divisors.defined()) {
      const auto f = divisors.to_vector<float>();
      for (size_t i = 0; i < inv.size(); ++i) {
        if (!(f[i] > 0)) throw Error(ErrorCode::kFormat, cfg_.source + ": rope frequency factors must be positive");
        inv[i] /= f[i];
      }
    }
    return Tensor::from_vector(inv, Shape{static_cast<int64_t>(inv.size())});
  }

  Tensor lin(const Tensor& x, const Weight& w) const { return linear(x, w, ggml_); }

  Tensor residual(const Tensor& h, const Tensor& branch) const {
    return add(h, spec_.residual_scale == 1.0 ? branch : mul(branch, spec_.residual_scale));
  }

  ModelConfig cfg_;
  bool interleaved_ = false, latent_ = false;
  bool ggml_ = false;              // NOTE [LLM numerics]
  double ggml_theta_scale_ = 0;    // rope's ggml angles (0: HF's)
  Tensor ggml_factors_;            // with them, the per-frequency factors (1 / rope_freqs)
  models::DecoderSpec spec_;      // the family's composition (NOTE [Model families])
  models::BlockDims dims_;
  Weight embed_, lm_head_;
  Tensor final_norm_, rope_div_short_, rope_div_long_, short_inv_, long_inv_;
  double short_scale_ = 1, long_scale_ = 1;
  std::vector<models::LayerWeights> layers_;
  std::map<double, Tensor> layer_inv_;  // rope frequencies of the layers' own bases
  MemoryReport memory_;
};

}  // namespace

std::shared_ptr<CausalLM> make_decoder_lm(const ModelConfig& config, WeightStore& weights, bool gguf_layout,
                                          bool ggml_numerics) {
  return std::make_shared<DecoderLM>(config, weights, gguf_layout, ggml_numerics);
}

}  // namespace spore::nlp
