// olmo2: OLMo 2 (transformers' Olmo2ForCausalLM, llama.cpp's "olmo2"). No norm before the attention
// or the MLP: each output is RMS-normed before its residual add (post_attention_layernorm,
// post_feedforward_layernorm), and q and k are RMS-normed over the whole projection (weights
// [heads * head_dim], before the heads split). GGUF keeps the NeoX rope order and names the norms
// post_attention_norm / post_ffw_norm. OLMo 3's sliding-window layers (a sliding_window key) are
// refused by name, not run without their windows.
#include <string>

#include "nlp/models/family.h"
#include "spore/error.h"
#include "spore/gguf.h"

namespace spore::nlp::models {

namespace {

class Olmo2 final : public Family {
 public:
  Olmo2() : Family("olmo2", {"olmo2"}, {"Olmo2ForCausalLM"}, "olmo2", {"olmo2"}) {
    const std::string L = "model.layers.{layer}.", B = "blk.{layer}.";
    names.attn_norm = names.ffn_norm = {};
    names.post_attn_norm = {L + "post_attention_layernorm.weight", B + "post_attention_norm.weight"};
    names.post_ffn_norm = {L + "post_feedforward_layernorm.weight", B + "post_ffw_norm.weight"};
  }

  void read_hf(const nlohmann::json& cfg, ModelConfig& c) const override {
    Family::read_hf(cfg, c);
    c.qk_norm = true;
    if (cfg.contains("sliding_window") && !cfg["sliding_window"].is_null())
      throw Error(ErrorCode::kUnsupported, c.source + ": sliding_window (OLMo 3's windowed layers; olmo2 has none)");
  }

  void read_gguf(const GgufFile& g, ModelConfig& c) const override {
    Family::read_gguf(g, c);
    c.qk_norm = true;
    const std::string key = c.architecture + ".attention.sliding_window";
    if (g.contains(key) && g.get_int(key) > 0)
      throw Error(ErrorCode::kUnsupported, c.source + ": " + key + " (OLMo 3's windowed layers; olmo2 has none)");
  }

  DecoderSpec decoder(const ModelConfig& c) const override {
    DecoderSpec s = Family::decoder(c);
    for (LayerSpec& l : s.layers) {
      l.pre_norms = false;
      l.post_norms = true;
      l.attention.qk_norm_full = true;
    }
    return s;
  }
};

}  // namespace

const Family& olmo2_family() {
  static const Olmo2 f;
  return f;
}

}  // namespace spore::nlp::models
