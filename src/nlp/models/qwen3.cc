// qwen3: Qwen3 dense models. The llama decoder with an RMSNorm over each head of q and of k
// (weights [head_dim]) before the rope, and head_dim given by the config (not hidden / heads).
// GGUF keeps the NeoX rope order.
#include "nlp/models/family.h"

namespace spore::nlp::models {

namespace {

class Qwen3 final : public Family {
 public:
  Qwen3() : Family("qwen3", {"qwen3"}, {"Qwen3ForCausalLM"}, "qwen3", {"qwen3"}) {}
  void read_hf(const nlohmann::json& cfg, ModelConfig& c) const override {
    Family::read_hf(cfg, c);
    c.qk_norm = true;
  }
  void read_gguf(const GgufFile& g, ModelConfig& c) const override {
    Family::read_gguf(g, c);
    c.qk_norm = true;
  }
};

}  // namespace

const Family& qwen3_family() {
  static const Qwen3 f;
  return f;
}

}  // namespace spore::nlp::models
