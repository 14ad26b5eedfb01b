// llama: Llama 2/3, TinyLlama, SmolLM2 (and Mistral-style configs without sliding windows). The
// plain decoder: no attention biases unless config.json's attention_bias says so. GGUF files
// from llama.cpp's converter carry q/k rows permuted for its interleaved rope.
#include "nlp/models/family.h"

namespace spore::nlp::models {

const Family& llama_family() {
  static const Family f = [] {
    Family x;
    x.name = "llama";
    x.hf_model_types = {"llama", "mistral"};
    x.hf_architectures = {"LlamaForCausalLM", "MistralForCausalLM"};
    x.gguf_arch = "llama";
    x.gguf_interleaved_rope = true;
    x.names = llama_style_names();
    return x;
  }();
  return f;
}

}  // namespace spore::nlp::models
