// qwen3: Qwen3 dense models. The llama decoder with an RMSNorm over each head of q and of k
// (weights [head_dim]) before the rope, and head_dim given by the config (not hidden / heads).
// GGUF keeps the NeoX rope order.
#include "nlp/models/family.h"

namespace spore::nlp::models {

const Family& qwen3_family() {
  static const Family f = [] {
    Family x;
    x.name = "qwen3";
    x.hf_model_types = {"qwen3"};
    x.hf_architectures = {"Qwen3ForCausalLM"};
    x.gguf_arch = "qwen3";
    x.qk_norm = true;
    x.names = llama_style_names();
    return x;
  }();
  return f;
}

}  // namespace spore::nlp::models
