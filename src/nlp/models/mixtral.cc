// mixtral: Mixtral 8x7B / 8x22B. The llama decoder with every MLP a mixture of experts (moe.h): a
// softmax router over num_local_experts, the top num_experts_per_tok renormalised (always, as
// transformers and llama.cpp do), each expert a SwiGLU MLP of intermediate_size (w1 gate, w3 up,
// w2 down). Its GGUF form is llama's (llama.cpp writes MixtralForCausalLM as "llama" with
// llama.expert_count, q/k rows permuted): the llama family hands such a file to this one.
#include <string>

#include "nlp/models/family.h"

namespace spore::nlp::models {

namespace {

class Mixtral final : public Family {
 public:
  Mixtral()
      : Family("mixtral", {"mixtral"}, {"MixtralForCausalLM"}, "", {"llama", /*permute_qk=*/true, /*llama_extras=*/true},
               /*interleaved_rope=*/true) {
    const std::string L = "model.layers.{layer}.block_sparse_moe.";
    names.router = {L + "gate.weight", names.router.gguf};
    names.gate_exps = {L + "experts.{expert}.w1.weight", names.gate_exps.gguf};
    names.up_exps = {L + "experts.{expert}.w3.weight", names.up_exps.gguf};
    names.down_exps = {L + "experts.{expert}.w2.weight", names.down_exps.gguf};
  }

  void read_hf(const nlohmann::json& cfg, ModelConfig& c) const override {
    Family::read_hf(cfg, c);
    read_moe_hf(cfg, c, "num_local_experts", "intermediate_size");
    c.extra["norm_topk_prob"] = 1;
    c.extra["shared_expert_intermediate_size"] = 0;
    read_sliding_window(cfg, c, /*absent=*/0);
  }

  void read_gguf(const GgufFile& g, ModelConfig& c) const override {
    Family::read_gguf(g, c);
    read_moe_gguf(g, c);
    c.extra["norm_topk_prob"] = 1;
  }

  void validate(ModelConfig& c) const override {
    Family::validate(c);
    validate_moe(c);
  }

  void write_gguf(const ModelConfig& c, GgufWriter& w) const override { write_moe_gguf(c, writes.arch, w, false); }

  DecoderSpec decoder(const ModelConfig& c) const override {
    DecoderSpec s = Family::decoder(c);
    for (LayerSpec& l : s.layers) {
      l.moe = moe_options(c);
      l.attention.sliding_window = static_cast<int64_t>(extra(c, "sliding_window"));
    }
    return s;
  }
};

}  // namespace

const Family& mixtral_family() {
  static const Mixtral f;
  return f;
}

}  // namespace spore::nlp::models
