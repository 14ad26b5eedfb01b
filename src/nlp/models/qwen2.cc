// qwen2: Qwen1.5, Qwen2, Qwen2.5, DeepSeek-R1-Distill-Qwen. The llama decoder with biases on the
// q, k and v projections (always present in Qwen2Attention, whatever the config says). GGUF keeps
// the NeoX rope order.
#include "nlp/models/family.h"

namespace spore::nlp::models {

const Family& qwen2_family() {
  static const Family f = [] {
    Family x;
    x.name = "qwen2";
    x.hf_model_types = {"qwen2"};
    x.hf_architectures = {"Qwen2ForCausalLM"};
    x.gguf_arch = "qwen2";
    x.default_attention_bias = true;
    x.names = llama_style_names();
    return x;
  }();
  return f;
}

}  // namespace spore::nlp::models
