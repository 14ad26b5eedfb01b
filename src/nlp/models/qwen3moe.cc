// qwen3moe: Qwen3 mixture-of-experts models (Qwen3-30B-A3B, Qwen3-235B-A22B). Qwen3's attention
// (per-head q/k RMSNorm, head_dim from the config) with every MLP a mixture of experts (moe.h):
// a softmax router picks num_experts_per_tok of num_experts SwiGLU experts, their weights
// renormalised when norm_topk_prob (llama.cpp always renormalises qwen3moe: its GGUF form says
// nothing else). No shared expert. GGUF keeps the NeoX rope order.
#include "nlp/models/family.h"

namespace spore::nlp::models {

namespace {

class Qwen3Moe final : public Family {
 public:
  Qwen3Moe() : Family("qwen3moe", {"qwen3_moe"}, {"Qwen3MoeForCausalLM"}, "qwen3moe", {"qwen3moe"}) {}

  void read_hf(const nlohmann::json& cfg, ModelConfig& c) const override {
    Family::read_hf(cfg, c);
    c.qk_norm = true;
    // Qwen's own configs say num_experts; transformers 5 saves it as num_local_experts.
    read_moe_hf(cfg, c, cfg.contains("num_experts") ? "num_experts" : "num_local_experts", "moe_intermediate_size");
    c.extra["shared_expert_intermediate_size"] = 0;
    refuse_dense_layers(cfg, c);
  }

  void read_gguf(const GgufFile& g, ModelConfig& c) const override {
    Family::read_gguf(g, c);
    c.qk_norm = true;
    read_moe_gguf(g, c);
    c.extra["norm_topk_prob"] = 1;
  }

  void validate(ModelConfig& c) const override {
    Family::validate(c);
    validate_moe(c);
  }

  void write_gguf(const ModelConfig& c, GgufWriter& w) const override { write_moe_gguf(c, writes.arch, w, true); }

  DecoderSpec decoder(const ModelConfig& c) const override {
    DecoderSpec s = Family::decoder(c);
    for (LayerSpec& l : s.layers) l.moe = moe_options(c);
    return s;
  }
};

}  // namespace

const Family& qwen3moe_family() {
  static const Qwen3Moe f;
  return f;
}

}  // namespace spore::nlp::models
