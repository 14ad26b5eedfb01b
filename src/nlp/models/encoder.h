// Encoder families (NOTE [Embeddings] in docs/design.md): bidirectional transformer encoders with
// post-layer norms, as BERT and nomic-bert are. Kept apart from the decoder families' `Family`
// (NOTE [Model families]): an encoder has no KV cache, no LM head and no causal mask, and its
// layer is one shape with three switches (fused qkv, rotary or absolute positions, GELU or
// SwiGLU MLP). A family is one object in src/nlp/models/<family>.cc: its spellings, its config
// reader for config.json and GGUF metadata, and its tensor names in both formats; the runner
// (encoder.cc) loads and runs any of them.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nlp/model_internal.h"
#include "nlp/models/family.h"
#include "spore/nlp/embed.h"

namespace spore::nlp::models {

struct EncoderConfig {
  std::string family;        // "bert", "nomic-bert"
  std::string architecture;  // "BertModel", "BertForSequenceClassification", GGUF "bert", ...
  std::string source;        // the file, for messages
  int64_t vocab_size = 0, hidden_size = 0, intermediate_size = 0, num_layers = 0, num_heads = 0;
  int64_t max_positions = 0;  // context: absolute position rows, or what the rope was trained for
  int64_t type_vocab_size = 0;
  double layer_norm_eps = 1e-12;
  double rope_theta = 0;           // > 0: rotary positions (NeoX halves) instead of a position table
  std::string activation = "gelu";  // gelu (erf), gelu_tanh, relu, swiglu
  bool fused_qkv = false;          // one [3 * hidden, hidden] projection (nomic's Wqkv)
  bool qkv_bias = true, out_bias = true, mlp_bias = true;
  int64_t num_labels = 0;          // classifier head outputs (cross-encoders: 1)
  std::optional<Pooling> pooling;  // what the artifact says (1_Pooling, GGUF pooling_type)
  std::string hf_prefix;           // "bert." when the encoder sits under a task head
};

// Base names (without ".weight" / ".bias"); {layer} is replaced by the layer number.
struct EncoderNames {
  TensorName token_embd, position_embd, type_embd, embd_norm;
  TensorName q, k, v, qkv, attn_out, attn_out_norm, up, gate, down, out_norm;
  TensorName pooler, classifier;  // cross-encoder head: tanh(pooler(h[CLS])), then classifier
};

class EncoderFamily {
 public:
  virtual ~EncoderFamily() = default;
  std::string name;
  std::vector<std::string> hf_model_types, hf_architectures;
  std::string gguf_arch;
  EncoderNames names;
  // config.json's fields into `c` (sizes are read by the caller through hf_int below).
  virtual void read_hf(const nlohmann::json& cfg, EncoderConfig& c) const = 0;
  // GGUF metadata under "<arch>." after the shared keys.
  virtual void read_gguf(const GgufFile& g, EncoderConfig& c) const = 0;

 protected:
  EncoderFamily(std::string n, std::vector<std::string> types, std::vector<std::string> archs, std::string gguf)
      : name(std::move(n)), hf_model_types(std::move(types)), hf_architectures(std::move(archs)), gguf_arch(std::move(gguf)) {}
};

const EncoderFamily& bert_encoder_family();        // bert.cc
const EncoderFamily& nomic_bert_encoder_family();  // nomic_bert.cc

std::vector<const EncoderFamily*> all_encoder_families();
const EncoderFamily* find_encoder_family_hf(std::string_view model_type, std::string_view architecture);
const EncoderFamily* find_encoder_family_gguf(std::string_view arch);

// The first of `names` config.json holds, as an integer (kFormat naming them when none is there
// and there is no default).
int64_t hf_int(const nlohmann::json& cfg, const std::vector<const char*>& names, const std::string& src,
               std::optional<int64_t> def = std::nullopt);
double hf_num(const nlohmann::json& cfg, const std::vector<const char*>& names, const std::string& src, double def);

// config.json (+ 1_Pooling/config.json beside it) or GGUF metadata -> EncoderConfig; nullopt
// when no encoder family claims the artifact.
std::optional<EncoderConfig> encoder_config_hf(const std::filesystem::path& dir);
std::optional<EncoderConfig> encoder_config_gguf(const GgufFile& g);

// The loaded encoder.
class Encoder {
 public:
  Encoder(const EncoderConfig& c, WeightStore& ws, bool gguf);
  const EncoderConfig& config() const { return cfg_; }
  // Hidden states of each sequence (float32 [len, hidden]); the sequences run together through
  // every projection and each attends only to itself. Ids and types are checked by the caller.
  std::vector<Tensor> forward(const std::vector<std::vector<int32_t>>& ids,
                              const std::vector<std::vector<int32_t>>& types) const;
  bool has_classifier() const { return classifier_.defined(); }
  // The classifier head on one sequence's hidden states: float32 [num_labels].
  Tensor classify(const Tensor& hidden) const;
  MemoryReport memory() const { return memory_; }

 private:
  struct Layer {
    Weight q, k, v, qkv, o, up, gate, down;
    Tensor q_b, k_b, v_b, o_b, up_b, down_b, attn_norm_w, attn_norm_b, out_norm_w, out_norm_b;
  };
  Tensor layer_norm(const Tensor& x, const Tensor& w, const Tensor& b) const;
  EncoderConfig cfg_;
  Weight token_embd_, position_embd_, type_embd_, pooler_, classifier_;
  Tensor embd_norm_w_, embd_norm_b_, pooler_b_, classifier_b_, inv_freq_;
  std::vector<Layer> layers_;
  MemoryReport memory_;
};

}  // namespace spore::nlp::models
