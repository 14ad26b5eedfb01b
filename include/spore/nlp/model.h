// Causal language models (NOTE [LLM engine] in docs/design.md): one config type for every family,
// loaded from a Hugging Face directory (config.json + safetensors, sharded or not) or a GGUF file
// (metadata), and one forward pass over a batch of sequence chunks that reads and writes a KV
// cache in place. Each family (src/nlp/models/<family>.cc) maps its config fields and weight names
// onto the shared blocks (embedding, rms_norm, rope, attention, kv_cache_write, SwiGLU MLP, LM
// head), all registry ops, so eager, graph mode and every backend run the same nodes.
//
//   auto m = spore::nlp::load_model("models/smollm2-135m-instruct");   // directory or .gguf
//   auto cache = m.lm->make_cache(/*slots=*/1, /*context=*/2048);
//   std::vector<int32_t> ids = m.tokenizer->encode("Hello");
//   spore::nlp::SequenceChunk c{/*slot=*/0, /*position=*/0, ids};
//   spore::Tensor logits = m.lm->forward({&c, 1}, *cache);   // float32 [1, vocab]: the last token's
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "spore/artifact_lock.h"
#include "spore/dtype.h"
#include "spore/nlp/chat_template.h"
#include "spore/nlp/tokenizer.h"
#include "spore/tensor.h"

namespace spore {
class GgufFile;
}

namespace spore::nlp {

struct LoraUse;  // spore/nlp/lora.h

// RoPE frequency scaling as the configs spell it ("rope_scaling" in config.json, rope.scaling.* in
// GGUF). Every variant only changes the inv_freq table and the cos/sin scale handed to the rope op.
struct RopeScaling {
  std::string type;  // "" (none), "linear", "llama3", "longrope", "yarn", "dynamic"
  double factor = 1.0;
  double low_freq_factor = 1.0, high_freq_factor = 4.0;  // llama3
  int64_t original_max_position = 0;                     // llama3, longrope, yarn
  std::vector<double> short_factor, long_factor;         // longrope (one per rotary pair)
  double attention_factor = 0;                           // longrope/yarn; 0: derived from factor
  double beta_fast = 32, beta_slow = 1;                  // yarn
};

// One config for every family; fields a family does not use keep their defaults. Read from
// config.json or GGUF metadata; a missing required field or a contradiction (heads not dividing
// the hidden size, kv heads not dividing heads, ...) is kFormat naming the file and the field.
struct ModelConfig {
  std::string family;        // "llama", "qwen2", "qwen3", "minicpm3", "mistral", "gemma2"
  std::string architecture;  // as the artifact names it: "LlamaForCausalLM", GGUF "llama", ...
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;  // grouped-query attention; == num_heads when the config omits it
  int64_t head_dim = 0;      // hidden_size / num_heads unless the config says otherwise (qwen3)
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  int64_t rope_dim = 0;  // rotary features per head (0: head_dim; GGUF rope.dimension_count)
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q/k/v projections carry biases (qwen2)
  bool qk_norm = false;         // per-head RMSNorm on q and k before rope (qwen3)
  int64_t v_head_dim = 0;  // value head size, every family (head_dim but for minicpm3: the KV cache's values)
  // One family's own hyperparameters, by their config.json names (NOTE [Model families]):
  // minicpm3 q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, scale_emb,
  // scale_depth, dim_model_base; mistral sliding_window; gemma2 sliding_window,
  // attn_logit_softcapping, final_logit_softcapping, query_pre_attn_scalar; the MoE families
  // (NOTE [Mixture of experts]) num_experts, num_experts_per_tok, moe_intermediate_size,
  // norm_topk_prob, shared_expert_intermediate_size, and deepseek2's latent ranks,
  // first_k_dense_replace, routed_scaling_factor, n_group, topk_group. The family's file reads them.
  std::map<std::string, double> extra;
  // Token ids the artifact declares (config.json, generation_config.json, GGUF tokenizer.ggml.*).
  std::optional<int32_t> bos_id;
  std::vector<int32_t> eos_ids;
  std::string source;  // the file the config came from, for messages

  static ModelConfig from_hf_json(const std::filesystem::path& config_json);
  static ModelConfig from_gguf(const GgufFile& gguf);
};

// The KV cache of one model: per layer, key and value tensors [slots, kv_heads, context, dim]
// (float16 by default), written in place by the kv_cache_write op at each chunk's position and
// read by attention. A slot is one sequence; the engine hands slots to requests.
class KvCache {
 public:
  KvCache(std::vector<Tensor> keys, std::vector<Tensor> values);
  int64_t layers() const { return static_cast<int64_t>(keys_.size()); }
  int64_t slots() const;
  int64_t context() const;
  DType dtype() const;
  uint64_t nbytes() const;
  const Tensor& keys(int64_t layer) const { return keys_.at(static_cast<size_t>(layer)); }
  const Tensor& values(int64_t layer) const { return values_.at(static_cast<size_t>(layer)); }

 private:
  std::vector<Tensor> keys_, values_;
};

// A run of tokens of one sequence: tokens[i] sits at position + i of `slot`, whose cache rows
// 0..position-1 already hold the sequence's earlier tokens (written by earlier forward calls).
struct SequenceChunk {
  int32_t slot = 0;
  int64_t position = 0;
  std::span<const int32_t> tokens;
  bool all_logits = false;  // logits for every token (spore logits), else for the last only
  // The LoRA adapters this chunk's tokens run (NOTE [LoRA adapters]; loaded for this model by
  // load_lora): each chunk its own, so one batch may mix adapters. Empty: the base model.
  std::span<const LoraUse> lora = {};
  // Every token's row computed as a one-token chunk at its position computes it, bit for bit
  // (speculative verification, NOTE [Exact speculation]): under ggml numerics attention then
  // takes the one-token order per row instead of llama.cpp's multi-token one. Off for prefill,
  // whose rows keep llama.cpp's bits.
  bool rows_as_decode = false;
};

// Bytes a loaded model occupies (printed at load; --max-memory checks them before allocating).
struct MemoryReport {
  uint64_t weights_mapped = 0;    // weights used in place from a read-only file mapping
  uint64_t weights_resident = 0;  // weights copied or converted into owned memory
  uint64_t kv_cache = 0;          // for the context and slots asked for
  uint64_t scratch = 0;           // activations of the largest forward the engine will run
  uint64_t total() const { return weights_mapped + weights_resident + kv_cache + scratch; }
};

class CausalLM {
 public:
  virtual ~CausalLM() = default;
  virtual const ModelConfig& config() const = 0;
  // A cache for `slots` sequences of up to `context` tokens (0: the config's maximum).
  virtual std::unique_ptr<KvCache> make_cache(int64_t slots, int64_t context, DType dtype = DType::kFloat16) const = 0;
  // Bytes of KV cache per token per slot, for admission and --max-memory.
  virtual uint64_t kv_bytes_per_token(DType dtype = DType::kFloat16) const = 0;
  // One forward pass over all chunks together (matrix products batched across chunks, attention
  // per chunk). Returns float32 logits [rows, vocab]: per chunk in order, every token's row when
  // all_logits, else the last token's. kValue naming the chunk when a position runs past the
  // cache's context, a token id is out of range or a slot does not exist.
  virtual Tensor forward(std::span<const SequenceChunk> chunks, KvCache& cache) = 0;
  // The same pass, returning the final norm's output (float32 [rows, hidden]) instead of the
  // logits: a decoder's token vectors, which embeddings pool (NOTE [Embeddings]). The base
  // throws kUnsupported.
  virtual Tensor forward_hidden(std::span<const SequenceChunk> chunks, KvCache& cache);
  // Weight bytes, mapped and resident.
  virtual MemoryReport weight_memory() const = 0;
};

// Sampling defaults an artifact declares (generation_config.json), applied under the caller's.
struct GenerationDefaults {
  std::optional<double> temperature, top_p, min_p, repetition_penalty;
  std::optional<int64_t> top_k;
};

struct LoadOptions {
  // Load even when the artifact's lock (spore.lock.json or <dir>.lock.json) does not match; the
  // override is recorded in LoadedModel::verification and every report.
  bool allow_unverified = false;
  bool require_tokenizer = false;  // kFormat when the artifact carries none (generate/chat do)
  // How the blocks round (NOTE [LLM numerics] in docs/design.md): kReference as float32
  // transformers (the HF fixtures match it within 1e-4), kGgml as llama.cpp's CPU backend (so a
  // GGUF model's greedy tokens match llama.cpp's); kAuto: ggml for GGUF files, reference for HF
  // directories.
  enum class Numerics { kAuto, kReference, kGgml };
  Numerics numerics = Numerics::kAuto;
};

// "auto", "reference", "ggml" (kValue naming the accepted names otherwise).
LoadOptions::Numerics parse_numerics(const std::string& name);

// Everything one artifact provides.
struct LoadedModel {
  std::filesystem::path path;           // the directory or .gguf file
  std::string format;                   // "safetensors" or "gguf"
  std::shared_ptr<CausalLM> lm;
  std::optional<Tokenizer> tokenizer;   // tokenizer.json or GGUF tokenizer.ggml.*
  std::optional<ChatTemplate> chat_template;
  GenerationDefaults generation;
  std::optional<VerifyResult> verification;  // when a lock was found
  bool verification_overridden = false;      // loaded despite a mismatch (LoadOptions)
  std::string numerics;                      // "reference" or "ggml" (auto resolved)
  double load_seconds = 0;
};

// Loads a Hugging Face model directory (config.json, model.safetensors or the shards listed by
// model.safetensors.index.json, tokenizer.json, tokenizer_config.json, generation_config.json) or
// a GGUF file (or a directory holding exactly one). Weights whose dtype the kernels take are
// used in place from the mapping. Errors name the file, field or tensor.
LoadedModel load_model(const std::filesystem::path& path, const LoadOptions& options = {});

// The embedded default model (SmolLM2-135M-Instruct, scripts/fetch-model.sh): $SPORE_MODEL when
// set, else models/smollm2-135m-instruct/ under the source tree the binary was built from.
// kIO with the command that fetches it when it is not there.
std::filesystem::path default_model_path();

}  // namespace spore::nlp
