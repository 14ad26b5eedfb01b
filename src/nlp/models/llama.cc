// llama: Llama 2/3, TinyLlama, SmolLM2. The plain decoder (the Family defaults): no attention
// biases unless config.json's attention_bias says so. GGUF files from llama.cpp's converter carry
// q/k rows permuted for its interleaved rope (and so do the ones spore convert writes).
#include "nlp/models/family.h"
#include "spore/gguf.h"

namespace spore::nlp::models {

namespace {

class Llama final : public Family {
 public:
  Llama()
      : Family("llama", {"llama"}, {"LlamaForCausalLM"}, "llama", {"llama", /*permute_qk=*/true, /*llama_extras=*/true},
               /*interleaved_rope=*/true) {}

  // llama.cpp writes Mixtral as "llama" with llama.expert_count: that file is mixtral's.
  void read_gguf(const GgufFile& g, ModelConfig& c) const override {
    if (g.contains(c.architecture + ".expert_count") && g.get_int(c.architecture + ".expert_count") > 0) {
      c.family = mixtral_family().name;
      mixtral_family().read_gguf(g, c);
      return;
    }
    Family::read_gguf(g, c);
  }
};

}  // namespace

const Family& llama_family() {
  static const Llama f;
  return f;
}

}  // namespace spore::nlp::models
