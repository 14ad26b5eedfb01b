// minicpm3: MiniCPM3-4B (../shared/reference/minicpm3-architecture.md). DeepSeek-V2's multi-head
// latent attention without its MoE: q through a low-rank pair (q_a -> RMSNorm -> q_b), k and v
// from a compressed latent (kv_a_proj_with_mqa -> [latent, shared rope key], RMSNorm -> kv_b ->
// per head [k_nope, v]); the rope (half-split, LongRoPE) only on the qk_rope_head_dim features.
// Embeddings times scale_emb, each residual branch times scale_depth / sqrt(layers), the final
// hidden state divided by hidden_size / dim_model_base; tied embeddings unless the config says not.
// Its hyperparameters live in ModelConfig::extra under their config.json names.
#include <cmath>
#include <string>

#include "nlp/models/family.h"
#include "spore/gguf.h"
#include "spore/gguf_writer.h"

namespace spore::nlp::models {

namespace {

// MiniCPM3's low-rank norms keep RMSNorm's default eps in transformers (not rms_norm_eps).
constexpr double kLatentNormEps = 1e-6;

// An integer hyperparameter of ModelConfig::extra, clamped so that the conversion is defined
// whatever config.json held (validate then rejects the out-of-range value by name).
int64_t ext(const ModelConfig& c, const char* key) {
  const double v = extra(c, key);
  constexpr double kLimit = 0x1p62;
  return v >= kLimit ? int64_t{1} << 62 : v <= -kLimit ? -(int64_t{1} << 62) : static_cast<int64_t>(v);
}

class MiniCpm3 final : public Family {
 public:
  MiniCpm3() : Family("minicpm3", {"minicpm3"}, {"MiniCPM3ForCausalLM"}, "minicpm3", {"minicpm3"}) {
    writes.own_rope = writes.own_head_lengths = true;
    const std::string L = "model.layers.{layer}.", B = "blk.{layer}.";
    names.q_a = {L + "self_attn.q_a_proj.weight", B + "attn_q_a.weight"};
    names.q_a_norm = {L + "self_attn.q_a_layernorm.weight", B + "attn_q_a_norm.weight"};
    names.q_b = {L + "self_attn.q_b_proj.weight", B + "attn_q_b.weight"};
    names.kv_a = {L + "self_attn.kv_a_proj_with_mqa.weight", B + "attn_kv_a_mqa.weight"};
    names.kv_a_norm = {L + "self_attn.kv_a_layernorm.weight", B + "attn_kv_a_norm.weight"};
    names.kv_b = {L + "self_attn.kv_b_proj.weight", B + "attn_kv_b.weight"};
  }

  bool default_tie() const override { return true; }

  // config.json's head_dim (when written) is the rotary part; the q/k head is nope + rope, the
  // value head hidden / heads unless v_head_dim says otherwise.
  void read_hf(const nlohmann::json& cfg, ModelConfig& c) const override {
    Family::read_hf(cfg, c);
    const std::string& src = c.source;
    for (const char* key : {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim"})
      c.extra[key] = static_cast<double>(json_int(cfg, key, src));
    c.v_head_dim = json_int(cfg, "v_head_dim", src, c.num_heads > 0 ? c.hidden_size / c.num_heads : 0);
    c.extra["scale_emb"] = json_num(cfg, "scale_emb", src, 1.0);
    c.extra["scale_depth"] = json_num(cfg, "scale_depth", src, 1.0);
    c.extra["dim_model_base"] = static_cast<double>(json_int(cfg, "dim_model_base", src, c.hidden_size));
    c.head_dim = ext(c, "qk_nope_head_dim") + ext(c, "qk_rope_head_dim");
    c.rope_dim = ext(c, "qk_rope_head_dim");
  }

  // llama.cpp writes the ranks and head sizes; MiniCPM3's scales are constants in its code
  // (scale_emb 12, scale_depth 1.4, dim_model_base 256), as in the one published model.
  void read_gguf(const GgufFile& g, ModelConfig& c) const override {
    const std::string p = c.architecture + ".";
    c.extra["q_lora_rank"] = static_cast<double>(g.get_int(p + "attention.q_lora_rank"));
    c.extra["kv_lora_rank"] = static_cast<double>(g.get_int(p + "attention.kv_lora_rank"));
    const int64_t rope = g.get_int(p + "rope.dimension_count");
    c.extra["qk_rope_head_dim"] = static_cast<double>(rope);
    c.extra["qk_nope_head_dim"] = static_cast<double>(c.head_dim - rope);
    const std::string vl = p + "attention.value_length";
    c.v_head_dim = g.contains(vl) ? g.get_int(vl) : (c.num_heads > 0 ? c.hidden_size / c.num_heads : 0);
    c.extra["scale_emb"] = 12;
    c.extra["scale_depth"] = 1.4;
    c.extra["dim_model_base"] = 256;
  }

  // As llama.cpp's MiniCPM3Model writes them: the ranks, the q/k head (nope + rope) as key_length,
  // the rotary size, the vocabulary size and the LongRoPE factors as tensors (no value_length: the
  // value head is hidden / heads there).
  void write_gguf_extras(const nlohmann::json& cfg, GgufWriter& w, std::vector<ExtraTensor>& tensors) const override {
    const std::string a = writes.arch + ".", src = "config.json";
    const int64_t nope = json_int(cfg, "qk_nope_head_dim", src), rope = json_int(cfg, "qk_rope_head_dim", src);
    w.set_u32(a + "vocab_size", static_cast<uint32_t>(json_int(cfg, "vocab_size", src)));
    if (cfg.contains("q_lora_rank") && !cfg["q_lora_rank"].is_null())
      w.set_u32(a + "attention.q_lora_rank", static_cast<uint32_t>(json_int(cfg, "q_lora_rank", src)));
    w.set_u32(a + "attention.kv_lora_rank", static_cast<uint32_t>(json_int(cfg, "kv_lora_rank", src)));
    w.set_u32(a + "attention.key_length", static_cast<uint32_t>(nope + rope));
    w.set_u32(a + "rope.dimension_count", static_cast<uint32_t>(rope));
    const nlohmann::json rs = rope_object(cfg);
    if (rs.contains("long_factor") || rs.contains("short_factor")) add_longrope_factor_tensors(rs, rope / 2, tensors);
  }

  void validate(ModelConfig& c) const override {
    const std::string& src = c.source;
    auto positive = [&](int64_t v, const char* key) {
      if (v <= 0 || v > (int64_t{1} << 31))
        config_fail(src, std::string(key) + " must be a positive size, got " + std::to_string(v));
    };
    for (const char* key : {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim"})
      positive(ext(c, key), key);
    positive(c.v_head_dim, "v_head_dim");
    positive(ext(c, "dim_model_base"), "dim_model_base");
    if (c.head_dim != ext(c, "qk_nope_head_dim") + ext(c, "qk_rope_head_dim") || c.rope_dim != ext(c, "qk_rope_head_dim"))
      config_fail(src, "the q/k head (" + std::to_string(c.head_dim) + ") must be qk_nope_head_dim + qk_rope_head_dim");
    if (c.num_kv_heads != c.num_heads)
      config_fail(src, "latent attention expands k and v to every head: num_key_value_heads must equal num_attention_heads");
    if (!(extra(c, "scale_emb") > 0) || !(extra(c, "scale_depth") > 0))
      config_fail(src, "scale_emb and scale_depth must be positive");
  }

  DecoderSpec decoder(const ModelConfig& c) const override {
    DecoderSpec s = Family::decoder(c);
    for (LayerSpec& l : s.layers)
      l.attention.latent = {ext(c, "q_lora_rank"), ext(c, "kv_lora_rank"), ext(c, "qk_nope_head_dim"),
                            ext(c, "qk_rope_head_dim"), kLatentNormEps};
    s.embed_scale = extra(c, "scale_emb");
    s.residual_scale = extra(c, "scale_depth") / std::sqrt(static_cast<double>(c.num_layers));
    s.head_scale = extra(c, "dim_model_base") / static_cast<double>(c.hidden_size);
    return s;
  }

  std::pair<int64_t, int64_t> projection_widths(const ModelConfig& c) const override {
    const int64_t qk = ext(c, "qk_nope_head_dim") + ext(c, "qk_rope_head_dim");
    return {c.num_heads * qk + ext(c, "q_lora_rank"), c.num_heads * (qk + c.v_head_dim) + ext(c, "kv_lora_rank")};
  }
};

}  // namespace

const Family& minicpm3_family() {
  static const MiniCpm3 f;
  return f;
}

}  // namespace spore::nlp::models
