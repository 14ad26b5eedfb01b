// gemma: Gemma 1 (transformers' GemmaForCausalLM, llama.cpp's "gemma"). The llama decoder with
// RMSNorm of x * (1 + weight), embeddings times sqrt(hidden_size) (rounded to float32 as
// transformers does), a GeGLU MLP (tanh GeLU) and tied embeddings. llama.cpp's converter folds the
// + 1 into the norm weights of its GGUF (GemmaModel.modify_tensors), so a GGUF's norms take no
// offset; the rope keeps Hugging Face's half-split (NeoX) order.
#include <cmath>

#include "nlp/models/family.h"

namespace spore::nlp::models {

namespace {

class Gemma final : public Family {
 public:
  Gemma() : Family("gemma", {"gemma"}, {"GemmaForCausalLM"}, "gemma", {"gemma"}) { writes.norm_plus_one = true; }

  bool default_tie() const override { return true; }

  void read_hf(const nlohmann::json& cfg, ModelConfig& c) const override {
    read_gelu_tanh(cfg, c);
    c.extra["norm_offset"] = 1;
  }

  void read_gguf(const GgufFile& g, ModelConfig& c) const override {
    Family::read_gguf(g, c);
    c.extra["norm_offset"] = 0;  // folded into the weights by the converter
  }

  DecoderSpec decoder(const ModelConfig& c) const override {
    DecoderSpec s = Family::decoder(c);
    for (LayerSpec& l : s.layers) {
      l.norm.offset = extra(c, "norm_offset");
      l.mlp.activation = Activation::kGeluTanh;
    }
    s.final_norm.offset = extra(c, "norm_offset");
    s.embed_scale = static_cast<float>(std::sqrt(static_cast<double>(c.hidden_size)));
    return s;
  }
};

}  // namespace

const Family& gemma_family() {
  static const Gemma f;
  return f;
}

}  // namespace spore::nlp::models
