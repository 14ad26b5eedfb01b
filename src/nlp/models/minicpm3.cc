// minicpm3: MiniCPM3-4B (../shared/reference/minicpm3-architecture.md). DeepSeek-V2's multi-head
// latent attention without its MoE: q through a low-rank pair (q_a -> RMSNorm -> q_b), k and v
// from a compressed latent (kv_a_proj_with_mqa -> [latent, shared rope key], RMSNorm -> kv_b ->
// per head [k_nope, v]); the rope (half-split, LongRoPE) only on the qk_rope_head_dim features.
// Embeddings times scale_emb, each residual branch times scale_depth / sqrt(layers), the final
// hidden state divided by hidden_size / dim_model_base; tied embeddings unless the config says not.
#include "nlp/models/family.h"

namespace spore::nlp::models {

const Family& minicpm3_family() {
  static const Family f = [] {
    Family x;
    x.name = "minicpm3";
    x.hf_model_types = {"minicpm3"};
    x.hf_architectures = {"MiniCPM3ForCausalLM"};
    x.gguf_arch = "minicpm3";
    x.latent_attention = true;
    x.default_tie = true;
    x.names = llama_style_names();
    return x;
  }();
  return f;
}

}  // namespace spore::nlp::models
