// qwen2: Qwen1.5, Qwen2, Qwen2.5, DeepSeek-R1-Distill-Qwen. The llama decoder with biases on the
// q, k and v projections (always present in Qwen2Attention, whatever the config says). GGUF keeps
// the NeoX rope order.
#include "nlp/models/family.h"

namespace spore::nlp::models {

namespace {

class Qwen2 final : public Family {
 public:
  Qwen2() : Family("qwen2", {"qwen2"}, {"Qwen2ForCausalLM"}, "qwen2", {"qwen2"}) {}
  void read_hf(const nlohmann::json& cfg, ModelConfig& c) const override {
    Family::read_hf(cfg, c);
    c.attention_bias = true;
  }
};

}  // namespace

const Family& qwen2_family() {
  static const Qwen2 f;
  return f;
}

}  // namespace spore::nlp::models
