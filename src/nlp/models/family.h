// The model families (NOTE [Model families] in docs/design.md). A family is one file,
// src/nlp/models/<family>.cc, holding one object behind the `Family` interface: the spellings
// artifacts use for it (Hugging Face model_type / architectures, GGUF general.architecture), its
// hyperparameters from config.json and from GGUF metadata, its tensor names in both formats (the
// one table the loader and `spore convert` read), and the composition of its layer from the
// shared blocks of src/nlp/models/blocks.h. The shared decoder (decoder.cc) runs any composition.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nlp/models/blocks.h"
#include "spore/nlp/model.h"

namespace spore {
class GgufFile;
class GgufWriter;
}

namespace spore::nlp::models {

// Where a weight comes from in each format; {layer} is replaced by the layer number.
struct TensorName {
  std::string hf;    // "model.layers.{layer}.self_attn.q_proj.weight"
  std::string gguf;  // "blk.{layer}.attn_q.weight"
};

// Names of one decoder layer's tensors and of the model's own (embedding, final norm, head).
// An empty name: the family has no such tensor.
struct WeightNames {
  TensorName embed, final_norm, lm_head;
  TensorName attn_norm, q, k, v, o, q_bias, k_bias, v_bias, o_bias, q_norm, k_norm;
  TensorName ffn_norm, gate, up, down;
  TensorName post_attn_norm, post_ffn_norm;  // Gemma 2's sandwich norms
  // Multi-head latent attention (minicpm3): low-rank q and a compressed kv with a shared rope key.
  TensorName q_a, q_a_norm, q_b, kv_a, kv_a_norm, kv_b;
  // kv_b as llama.cpp's converter splits it for deepseek2 (per head: k_b transposed, v_b).
  TensorName k_b, v_b;
  // Mixture of experts (NOTE [Mixture of experts]): the router and its selection bias, the routed
  // experts' projections (Hugging Face: one tensor per expert, "{expert}" in the pattern; GGUF: one
  // 3-D tensor), the shared experts and their gate.
  TensorName router, expert_bias, gate_exps, up_exps, down_exps, gate_shexp, up_shexp, down_shexp, shexp_gate;
  TensorName qkv, gate_up;  // fused projections (phi3)

  // Every entry, for the converter's Hugging Face -> GGUF map.
  std::vector<const TensorName*> all() const;
};

// The Llama-style names every family here shares (model.layers.N.* / blk.N.*).
WeightNames llama_style_names();

// How `spore convert` writes a family, as llama.cpp's convert_hf_to_gguf.py does.
struct GgufWriting {
  std::string arch;            // general.architecture written; empty: spore convert refuses the family
  bool permute_qk = false;     // LlamaModel.permute of q/k rows for the interleaved (GPT-J) rope
  bool llama_extras = false;   // <arch>.vocab_size, rope.dimension_count, add_space_prefix (LlamaModel)
  bool norm_plus_one = false;  // every *norm.weight written as weight + 1 (Gemma's converters)
  bool own_rope = false;       // the family's write_gguf_extras writes its rope scaling (phi3's LongRoPE)
  bool own_head_lengths = false;  // ... and its key/value lengths (minicpm3's head_dim is the rotary part)
};

// A float32 tensor spore convert writes beside the weights (phi3's rope factors).
struct ExtraTensor {
  std::string name;
  std::vector<float> values;
};

class Family {
 public:
  virtual ~Family() = default;

  std::string name;                           // "llama"
  std::vector<std::string> hf_model_types;    // config.json model_type values
  std::vector<std::string> hf_architectures;  // config.json architectures[0] values
  std::string gguf_arch;                      // general.architecture it loads (empty: none of its own)
  // llama.cpp's converter permutes llama's q/k rows for its interleaved rope; the loader undoes it
  // by rotating adjacent pairs. qwen2/qwen3/minicpm3 GGUFs keep Hugging Face's half-split order.
  bool gguf_interleaved_rope = false;
  GgufWriting writes;
  WeightNames names;

  // config.json, after the shared fields (sizes, rope, eps, tie with default_tie(), ids) are
  // read into `c`: the family's own fields (c.extra) and options. kFormat / kUnsupported naming
  // the field. The base rejects activations other than silu.
  virtual void read_hf(const nlohmann::json& cfg, ModelConfig& c) const;
  // GGUF metadata under "<arch>.", after the shared keys. The base refuses value_length != key_length.
  virtual void read_gguf(const GgufFile& g, ModelConfig& c) const;
  // Derived fields and the family's own contradictions, after the shared checks of head_dim and
  // heads; the base sets v_head_dim to head_dim when unset.
  virtual void validate(ModelConfig& c) const;
  // The blocks of the decoder, per layer. The base: pre-norm RMSNorm, grouped-query attention
  // (c.attention_bias, c.qk_norm), SwiGLU MLP.
  virtual DecoderSpec decoder(const ModelConfig& c) const;
  // Activation widths per token of the q and of the k+v projections (the memory plan's scratch).
  virtual std::pair<int64_t, int64_t> projection_widths(const ModelConfig& c) const;
  // spore convert: the family's own keys (and tensors) as llama.cpp's converter writes them, after
  // the shared ones (sizes, rope base and scaling, eps, head lengths); kFormat naming the field.
  virtual void write_gguf_extras(const nlohmann::json& /*cfg*/, GgufWriter& /*w*/, std::vector<ExtraTensor>& /*tensors*/) const {}
  // config.json's tie_word_embeddings when absent.
  virtual bool default_tie() const { return false; }
  // spore convert: the family's own <arch>.* keys (experts, latent ranks), after the shared ones;
  // `c` is config.json read as the loader reads it. The base writes none.
  virtual void write_gguf(const ModelConfig& c, GgufWriter& w) const;

 protected:
  Family(std::string name_, std::vector<std::string> model_types, std::vector<std::string> architectures,
         std::string gguf, GgufWriting writing, bool interleaved_rope = false)
      : name(std::move(name_)),
        hf_model_types(std::move(model_types)),
        hf_architectures(std::move(architectures)),
        gguf_arch(std::move(gguf)),
        gguf_interleaved_rope(interleaved_rope),
        writes(std::move(writing)),
        names(llama_style_names()) {}
};

const Family& llama_family();     // llama.cc
const Family& qwen2_family();     // qwen2.cc
const Family& qwen3_family();     // qwen3.cc
const Family& minicpm3_family();  // minicpm3.cc
const Family& mistral_family();   // mistral.cc
const Family& gemma2_family();    // gemma2.cc
const Family& qwen3moe_family();  // qwen3moe.cc
const Family& qwen2moe_family();  // qwen2moe.cc
const Family& mixtral_family();   // mixtral.cc
const Family& deepseek2_family(); // deepseek2.cc
const Family& gemma_family();     // gemma.cc
const Family& gemma3_family();    // gemma3.cc
const Family& phi3_family();      // phi3.cc
const Family& granite_family();   // granite.cc
const Family& olmo2_family();     // olmo2.cc

// All families, for lookup and messages.
std::vector<const Family*> all_families();
// nullptr when no family claims the name.
const Family* find_family(std::string_view name);
const Family* find_family_hf(std::string_view model_type, std::string_view architecture);
const Family* find_family_gguf(std::string_view arch);
// "llama, qwen2, qwen3" for messages.
std::string family_names();

// "{layer}" replaced by the number.
std::string layer_name(const std::string& pattern, int64_t layer);

// config.json's sliding_window into extra["sliding_window"]: `absent` when the field is missing,
// none when it is null or the whole context fits in it; kFormat when negative.
void read_sliding_window(const nlohmann::json& cfg, ModelConfig& c, int64_t absent);

// Gemma's MLP activation: config.json's hidden_activation, else hidden_act, must be the tanh GeLU
// (gelu_pytorch_tanh); kUnsupported naming the field and the family otherwise.
void read_gelu_tanh(const nlohmann::json& cfg, ModelConfig& c);

// config.json's rope object: rope_scaling (transformers 4) or rope_parameters (5); {} when neither.
nlohmann::json rope_object(const nlohmann::json& cfg);
// spore convert: LongRoPE's long_factor / short_factor of `rope` as the tensors llama.cpp's
// converters write (rope_factors_long / _short.weight), `half` numbers each; kFormat naming the
// field otherwise.
void add_longrope_factor_tensors(const nlohmann::json& rope, int64_t half, std::vector<ExtraTensor>& tensors);

// Whether the ggml numerics have a kernel for every block the config's family composes (no sliding
// window, soft-cap or per-layer rope base): GGUF files load with them unless told otherwise.
bool ggml_numerics_cover(const ModelConfig& c);

// A family hyperparameter kept in ModelConfig::extra (0 when absent).
double extra(const ModelConfig& c, const std::string& key);

// config.json field readers (model_config.cc): typed, kFormat naming `src` and the field.
int64_t json_int(const nlohmann::json& j, const char* name, const std::string& src,
                 std::optional<int64_t> def = std::nullopt);
double json_num(const nlohmann::json& j, const char* name, const std::string& src,
                std::optional<double> def = std::nullopt);
std::string json_str(const nlohmann::json& j, const char* name, const std::string& src);
[[noreturn]] void config_fail(const std::string& source, const std::string& what);

}  // namespace spore::nlp::models
