// mistral: Mistral 7B v0.1-style models. The llama decoder whose attention sees only the last
// config.sliding_window keys (transformers' MistralForCausalLM; null or absent: no window).
// Its GGUF form is llama's: llama.cpp's converter writes MistralForCausalLM as general.architecture
// "llama" (q/k rows permuted) without the window, and llama.cpp runs it without one; spore convert
// writes the same file, which the llama family then loads (the window does not survive GGUF).
#include <string>

#include "nlp/models/family.h"

namespace spore::nlp::models {

namespace {

class Mistral final : public Family {
 public:
  // No GGUF architecture of its own; spore convert writes llama.cpp's "llama" file.
  Mistral()
      : Family("mistral", {"mistral"}, {"MistralForCausalLM"}, "", {"llama", /*permute_qk=*/true, /*llama_extras=*/true}) {}

  void read_hf(const nlohmann::json& cfg, ModelConfig& c) const override {
    Family::read_hf(cfg, c);
    read_sliding_window(cfg, c, /*absent=*/0);
  }

  DecoderSpec decoder(const ModelConfig& c) const override {
    DecoderSpec s = Family::decoder(c);
    for (LayerSpec& l : s.layers) l.attention.sliding_window = static_cast<int64_t>(extra(c, "sliding_window"));
    return s;
  }
};

}  // namespace

const Family& mistral_family() {
  static const Mistral f;
  return f;
}

}  // namespace spore::nlp::models
