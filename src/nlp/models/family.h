// The model families (NOTE [LLM engine] in docs/design.md): what each one changes in the shared
// decoder (src/nlp/models/decoder.h). A family is a name, the spellings artifacts use for it
// (Hugging Face model_type / architectures, GGUF general.architecture), the blocks it adds
// (attention biases, per-head q/k norms) and the weight names of its tensors in both formats.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace spore::nlp::models {

// Where a weight comes from in each format; {layer} is replaced by the layer number.
struct TensorName {
  std::string hf;    // "model.layers.{layer}.self_attn.q_proj.weight"
  std::string gguf;  // "blk.{layer}.attn_q.weight"
};

// Names of one decoder layer's tensors and of the model's own (embedding, final norm, head).
struct WeightNames {
  TensorName embed, final_norm, lm_head;
  TensorName attn_norm, q, k, v, o, q_bias, k_bias, v_bias, q_norm, k_norm;
  TensorName ffn_norm, gate, up, down;
  // Multi-head latent attention (minicpm3): low-rank q and a compressed kv with a shared rope key.
  TensorName q_a, q_a_norm, q_b, kv_a, kv_a_norm, kv_b;
};

struct Family {
  std::string name;                            // "llama"
  std::vector<std::string> hf_model_types;     // config.json model_type values
  std::vector<std::string> hf_architectures;   // config.json architectures[0] values
  std::string gguf_arch;                       // general.architecture
  bool default_attention_bias = false;         // qwen2: q/k/v biases whatever the config says
  bool qk_norm = false;                        // qwen3: per-head RMSNorm of q and k
  // llama.cpp's converter permutes llama's q/k rows for its interleaved (GPT-J) rope; qwen2/qwen3
  // GGUFs keep Hugging Face's half-split (NeoX) order.
  bool gguf_interleaved_rope = false;
  // minicpm3: multi-head latent attention, scale_emb / scale_depth / dim_model_base, tied by default.
  bool latent_attention = false;
  bool default_tie = false;
  WeightNames names;
};

// The Llama-style names every family here shares (model.layers.N.* / blk.N.*).
WeightNames llama_style_names();

const Family& llama_family();   // llama.cc
const Family& qwen2_family();   // qwen2.cc
const Family& qwen3_family();   // qwen3.cc
const Family& minicpm3_family();  // minicpm3.cc

// All families, for lookup and messages.
std::vector<const Family*> all_families();
// nullptr when no family claims the name.
const Family* find_family_hf(std::string_view model_type, std::string_view architecture);
const Family* find_family_gguf(std::string_view arch);
// "llama, qwen2, qwen3" for messages.
std::string family_names();

// "{layer}" replaced by the number.
std::string layer_name(const std::string& pattern, int64_t layer);

}  // namespace spore::nlp::models
