// qwen2moe: Qwen1.5-MoE and Qwen2-57B-A14B. Qwen2's attention (q/k/v biases) with every MLP a
// mixture of experts (moe.h): a softmax router's top num_experts_per_tok (renormalised when
// norm_topk_prob; llama.cpp never renormalises qwen2moe), plus one shared SwiGLU expert of
// shared_expert_intermediate_size whose output is scaled by sigmoid(shared_expert_gate . x).
// GGUF keeps the NeoX rope order.
#include "nlp/models/family.h"

namespace spore::nlp::models {

namespace {

class Qwen2Moe final : public Family {
 public:
  Qwen2Moe() : Family("qwen2moe", {"qwen2_moe"}, {"Qwen2MoeForCausalLM"}, "qwen2moe", {"qwen2moe"}) {}

  void read_hf(const nlohmann::json& cfg, ModelConfig& c) const override {
    Family::read_hf(cfg, c);
    c.attention_bias = !(cfg.contains("qkv_bias") && cfg["qkv_bias"].is_boolean() && !cfg["qkv_bias"].get<bool>());
    read_moe_hf(cfg, c, "num_experts", "moe_intermediate_size");
    refuse_dense_layers(cfg, c);
  }

  void read_gguf(const GgufFile& g, ModelConfig& c) const override {
    Family::read_gguf(g, c);
    read_moe_gguf(g, c);
    c.extra["norm_topk_prob"] = 0;
  }

  void validate(ModelConfig& c) const override {
    Family::validate(c);
    validate_moe(c);
  }

  void write_gguf(const ModelConfig& c, GgufWriter& w) const override { write_moe_gguf(c, writes.arch, w, true); }

  DecoderSpec decoder(const ModelConfig& c) const override {
    DecoderSpec s = Family::decoder(c);
    for (LayerSpec& l : s.layers) {
      l.moe = moe_options(c);
      l.moe.shared_gate = l.moe.shared_ffn > 0;
    }
    return s;
  }
};

}  // namespace

const Family& qwen2moe_family() {
  static const Qwen2Moe f;
  return f;
}

}  // namespace spore::nlp::models
