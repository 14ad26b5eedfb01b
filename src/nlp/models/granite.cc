// granite: IBM Granite 3.x dense models (transformers' GraniteForCausalLM, llama.cpp's "granite").
// The llama decoder with four multipliers: embeddings times embedding_multiplier, each residual
// branch times residual_multiplier, attention scores times attention_multiplier (instead of
// head_dim^-1/2) and the logits divided by logits_scaling. GGUF (llama.cpp's converter, a
// LlamaModel): q/k rows permuted for the interleaved rope, the multipliers as embedding_scale,
// residual_scale, attention.scale and logit_scale.
#include <string>

#include "nlp/models/family.h"
#include "spore/gguf.h"
#include "spore/gguf_writer.h"

namespace spore::nlp::models {

namespace {

// config.json name -> GGUF key (after "<arch>."), llama.cpp's spelling.
constexpr const char* kMultipliers[][2] = {{"embedding_multiplier", "embedding_scale"},
                                           {"residual_multiplier", "residual_scale"},
                                           {"attention_multiplier", "attention.scale"},
                                           {"logits_scaling", "logit_scale"}};

class Granite final : public Family {
 public:
  Granite()
      : Family("granite", {"granite"}, {"GraniteForCausalLM"}, "granite",
               {"granite", /*permute_qk=*/true, /*llama_extras=*/true}, /*interleaved_rope=*/true) {}

  void read_hf(const nlohmann::json& cfg, ModelConfig& c) const override {
    Family::read_hf(cfg, c);
    for (const auto& [field, key] : kMultipliers) c.extra[field] = json_num(cfg, field, c.source, 1.0);
  }

  // Absent keys: transformers' defaults (1), as llama.cpp's converter writes only those set; a
  // missing attention.scale is head_dim^-1/2 in llama.cpp (0 here means the same).
  void read_gguf(const GgufFile& g, ModelConfig& c) const override {
    Family::read_gguf(g, c);
    for (const auto& [field, key] : kMultipliers) {
      const std::string k = c.architecture + "." + key;
      c.extra[field] = g.contains(k) ? g.get_float(k) : (std::string(field) == "attention_multiplier" ? 0.0 : 1.0);
    }
  }

  // llama.cpp's GraniteModel writes each multiplier config.json sets (and ignores head_dim).
  void write_gguf_extras(const nlohmann::json& cfg, GgufWriter& w, std::vector<ExtraTensor>&) const override {
    for (const auto& [field, key] : kMultipliers)
      if (cfg.contains(field) && cfg[field].is_number() && cfg[field].get<double>() != 0)
        w.set_f32(writes.arch + "." + key, cfg[field].get<float>());
  }

  void validate(ModelConfig& c) const override {
    Family::validate(c);
    for (const auto& [field, key] : kMultipliers)
      if (!(extra(c, field) > 0) && !(std::string(field) == "attention_multiplier" && extra(c, field) == 0))
        config_fail(c.source, std::string(field) + " must be positive, got " + std::to_string(extra(c, field)));
  }

  DecoderSpec decoder(const ModelConfig& c) const override {
    DecoderSpec s = Family::decoder(c);
    for (LayerSpec& l : s.layers) l.attention.scale = extra(c, "attention_multiplier");
    s.embed_scale = extra(c, "embedding_multiplier");
    s.residual_scale = extra(c, "residual_multiplier");
    s.head_scale = 1.0 / extra(c, "logits_scaling");
    return s;
  }
};

}  // namespace

const Family& granite_family() {
  static const Granite f;
  return f;
}

}  // namespace spore::nlp::models
