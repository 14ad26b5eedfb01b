// gemma2: Gemma 2 text models (transformers' Gemma2ForCausalLM), from safetensors. The blocks'
// options it takes: RMSNorm of x * (1 + weight), a second norm on the attention's and the MLP's
// outputs before each residual add (post_attention_layernorm / post_feedforward_layernorm; its
// pre_feedforward_layernorm is the usual ffn norm), embeddings times sqrt(hidden_size) (rounded to
// float32 as transformers does), a GeGLU MLP (gelu, tanh approximation), attention scaled by
// query_pre_attn_scalar^-1/2 with its scores soft-capped, a sliding window on every other layer
// (layer_types: sliding, full, sliding, ...) and the logits soft-capped. Tied embeddings.
// GGUF (llama.cpp's converter): the + 1 folded into the norm weights, the soft-caps and the window
// as keys, no query_pre_attn_scalar: llama.cpp scales by key_length^-1/2 (by (hidden / heads)^-1/2
// for the 46-layer 27B), and so does this file reading a GGUF, as llama.cpp runs that file.
#include <cmath>
#include <string>

#include "nlp/models/family.h"
#include "spore/error.h"
#include "spore/gguf.h"
#include "spore/gguf_writer.h"

namespace spore::nlp::models {

namespace {

class Gemma2 final : public Family {
 public:
  Gemma2() : Family("gemma2", {"gemma2"}, {"Gemma2ForCausalLM"}, "gemma2", {"gemma2"}) {
    writes.norm_plus_one = true;
    const std::string L = "model.layers.{layer}.", B = "blk.{layer}.";
    names.ffn_norm = {L + "pre_feedforward_layernorm.weight", B + "ffn_norm.weight"};
    names.post_attn_norm = {L + "post_attention_layernorm.weight", B + "post_attention_norm.weight"};
    names.post_ffn_norm = {L + "post_feedforward_layernorm.weight", B + "post_ffw_norm.weight"};
  }

  bool default_tie() const override { return true; }

  void read_hf(const nlohmann::json& cfg, ModelConfig& c) const override {
    const std::string& src = c.source;
    std::string act = json_str(cfg, "hidden_activation", src);
    if (act.empty()) act = json_str(cfg, "hidden_act", src);
    if (!act.empty() && act != "gelu_pytorch_tanh" && act != "gelu_tanh")
      throw Error(ErrorCode::kUnsupported, src + ": hidden_activation \"" + act + "\" (gemma2 runs gelu_pytorch_tanh)");
    // null switches a feature off; absent takes transformers' Gemma2Config default.
    auto is_null = [&](const char* key) { return cfg.contains(key) && cfg[key].is_null(); };
    c.extra["norm_offset"] = 1;
    read_sliding_window(cfg, c, /*absent=*/4096);
    c.extra["attn_logit_softcapping"] = is_null("attn_logit_softcapping") ? 0 : json_num(cfg, "attn_logit_softcapping", src, 50.0);
    c.extra["final_logit_softcapping"] =
        is_null("final_logit_softcapping") ? 0 : json_num(cfg, "final_logit_softcapping", src, 30.0);
    c.extra["query_pre_attn_scalar"] = json_num(cfg, "query_pre_attn_scalar", src, 256.0);
    for (const char* key : {"attn_logit_softcapping", "final_logit_softcapping"})
      if (c.extra[key] < 0) config_fail(src, std::string(key) + " must be positive or null");
    if (!(c.extra["query_pre_attn_scalar"] > 0)) config_fail(src, "query_pre_attn_scalar must be positive");
    // Sliding layers alternate, starting with the first; other patterns are refused, not guessed.
    if (const auto it = cfg.find("layer_types"); it != cfg.end() && !it->is_null()) {
      if (!it->is_array()) config_fail(src, "layer_types must be a list of layer kinds");
      for (size_t i = 0; i < it->size(); ++i) {
        const char* want = i % 2 == 0 ? "sliding_attention" : "full_attention";
        if (!(*it)[i].is_string() || (*it)[i].get<std::string>() != want)
          throw Error(ErrorCode::kUnsupported, src + ": layer_types[" + std::to_string(i) + "] is " + (*it)[i].dump() +
                                                   "; gemma2 runs the alternating pattern (sliding, full, ...)");
      }
    }
  }

  // As llama.cpp's Gemma2Model writes them (query_pre_attn_scalar does not survive).
  void write_gguf_extras(const nlohmann::json& cfg, GgufWriter& w, std::vector<ExtraTensor>&) const override {
    const std::string a = writes.arch + ".";
    for (const char* key : {"attn_logit_softcapping", "final_logit_softcapping"})
      if (cfg.contains(key) && cfg[key].is_number()) w.set_f32(a + key, cfg[key].get<float>());
    if (cfg.contains("sliding_window") && cfg["sliding_window"].is_number_integer())
      w.set_u32(a + "attention.sliding_window", cfg["sliding_window"].get<uint32_t>());
  }

  // llama.cpp's reading (gemma2.cpp): window 4096 unless the key says otherwise, pattern 2.
  void read_gguf(const GgufFile& g, ModelConfig& c) const override {
    Family::read_gguf(g, c);
    const std::string p = c.architecture + ".";
    c.extra["norm_offset"] = 0;  // folded into the weights by the converter
    auto opt = [&](const std::string& key, double def) { return g.contains(p + key) ? g.get_float(p + key) : def; };
    c.extra["attn_logit_softcapping"] = opt("attn_logit_softcapping", 0.0);
    c.extra["final_logit_softcapping"] = opt("final_logit_softcapping", 0.0);
    const int64_t window = g.contains(p + "attention.sliding_window") ? g.get_int(p + "attention.sliding_window") : 4096;
    if (window < 0) config_fail(c.source, p + "attention.sliding_window must not be negative");
    if (window > 0 && window < c.max_position_embeddings) c.extra["sliding_window"] = static_cast<double>(window);
    if (const GgufValue* v = g.find(p + "attention.sliding_window_pattern"); v && (v->is_array() || g.get_int(p + "attention.sliding_window_pattern") != 2))
      throw Error(ErrorCode::kUnsupported, c.source + ": " + p + "attention.sliding_window_pattern (gemma2 runs the alternating pattern, 2)");
    const int64_t per_head = c.num_heads > 0 ? c.hidden_size / c.num_heads : 0;  // heads checked later
    const int64_t head = c.head_dim > 0 ? c.head_dim : per_head;
    c.extra["query_pre_attn_scalar"] = static_cast<double>(c.num_layers == 46 ? per_head : head);
    for (const char* key : {"attn_logit_softcapping", "final_logit_softcapping"})
      if (c.extra[key] < 0) config_fail(c.source, p + key + " must not be negative");
  }

  DecoderSpec decoder(const ModelConfig& c) const override {
    DecoderSpec s = Family::decoder(c);
    for (size_t i = 0; i < s.layers.size(); ++i) {
      LayerSpec& l = s.layers[i];
      l.norm.offset = extra(c, "norm_offset");
      l.post_norms = true;
      l.mlp.activation = Activation::kGeluTanh;
      l.attention.scale = 1.0 / std::sqrt(extra(c, "query_pre_attn_scalar"));
      l.attention.softcap = extra(c, "attn_logit_softcapping");
      if (i % 2 == 0) l.attention.sliding_window = static_cast<int64_t>(extra(c, "sliding_window"));
    }
    s.final_norm.offset = extra(c, "norm_offset");
    s.embed_scale = static_cast<float>(std::sqrt(static_cast<double>(c.hidden_size)));
    s.logit_softcap = extra(c, "final_logit_softcapping");
    return s;
  }
};

}  // namespace

const Family& gemma2_family() {
  static const Gemma2 f;
  return f;
}

}  // namespace spore::nlp::models
