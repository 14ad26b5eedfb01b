// Internals of the LLM engine shared by its files (src/nlp/model_*.cc, src/nlp/models/*.cc).
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "spore/nlp/model.h"
#include "spore/quant.h"
#include "spore/tensor.h"

namespace spore::nlp {

// ---- config (model_config.cc) ----
nlohmann::json parse_json_text(const std::string& text, const std::string& source);
// config.json's object -> ModelConfig (family by model_type / architectures); `source` names it.
ModelConfig config_from_json(const nlohmann::json& cfg, const std::string& source);
// Fills derived fields (head_dim, rope_dim) and rejects contradictions: kFormat naming the field.
void validate_config(ModelConfig& c);
// The rope's inv_freq table for a cache of `context` positions (LongRoPE picks its long factors
// past the original context), and the cos/sin scale the scaling asks for.
std::vector<float> rope_inv_freq(const ModelConfig& c, int64_t context, double* attention_scale);

// ---- weights (model_weights.cc) ----
// A weight matrix [rows, cols] as the kernels take it: float32 for matmul (x times w^T), or
// float16/bfloat16 [rows, cols] / GGUF blocks uint8 [rows, row_bytes] for matmul_q(type).
struct Weight {
  Tensor data;
  // kF32: float32 through matmul; else matmul_q's weight type, resolved once at load.
  GgmlType qtype = GgmlType::kF32;
  int64_t rows = 0, cols = 0;
  bool defined() const { return data.defined(); }
};
// x float32 [m, cols] -> [m, rows].
// ggml: matmul_q's ggml activation rounding (NOTE [LLM numerics]); float32 weights ignore it.
Tensor linear(const Tensor& x, const Weight& w, bool ggml = false);
// Rows of an embedding table for `ids` (each checked by the caller): float32 [ids, cols].
Tensor embed_rows(const Weight& table, const std::vector<int32_t>& ids);
// The weight as float32 [rows, cols] (a copy unless it is float32 already).
Tensor weight_to_float(const Weight& w);

// Tensors of one artifact by name, used in place where their dtype allows.
class WeightStore {
 public:
  virtual ~WeightStore() = default;
  virtual bool contains(const std::string& name) const = 0;
  // A 2-D weight of exactly [rows, cols]: kFormat naming the tensor and file when absent, kShape
  // when its shape differs, kDType when its type is one the kernels do not take.
  virtual Weight matrix(const std::string& name, int64_t rows, int64_t cols) = 0;
  // A 3-D weight of exactly [n, rows, cols] (GGUF's stacked experts, NOTE [Mixture of experts])
  // as n Weights [rows, cols], each a view of its slice: the same errors as matrix, kShape when
  // the leading dimension is not n. The base refuses (safetensors name each expert's tensor).
  virtual std::vector<Weight> stacked(const std::string& name, int64_t n, int64_t rows, int64_t cols);
  // A 1-D float32 vector of `size` (norm weights, biases); converted when stored otherwise.
  virtual Tensor vector(const std::string& name, int64_t size) = 0;
  virtual std::string source() const = 0;
  const MemoryReport& memory() const { return memory_; }

 protected:
  MemoryReport memory_;
};

// model.safetensors or the shards model.safetensors.index.json lists, under `dir`.
std::unique_ptr<WeightStore> open_safetensors_weights(const std::filesystem::path& dir);
// The shard file names a model.safetensors.index.json's weight_map lists (sorted, unique),
// and the map itself: kFormat naming the file and field when malformed. (Fuzzed.)
std::map<std::string, std::string> parse_safetensors_index(const std::string& text, const std::string& source);
// `ggml_numerics`: the model computes as llama.cpp does, so only the types llama.cpp's own CPU
// backend repacks on x86 are repacked at load (NOTE [Repacked weights]).
std::unique_ptr<WeightStore> open_gguf_weights(std::shared_ptr<const GgufFile> gguf, bool ggml_numerics = false);
// Whether a GGUF load repacks a [rows, ...] matrix of `type` (NOTE [Repacked weights]): q4_0 under
// either numerics, q5_0 under reference numerics too; never q8_0 for now.
bool repacked_at_load(GgmlType type, int64_t rows, bool ggml_numerics);

// ---- the decoder (models/decoder.cc) ----
// `gguf_layout`: the weights come from a GGUF (its names; llama's permuted q/k rows).
// `ggml_numerics`: the blocks round as llama.cpp does (NOTE [LLM numerics]).
std::shared_ptr<CausalLM> make_decoder_lm(const ModelConfig& config, WeightStore& weights, bool gguf_layout,
                                          bool ggml_numerics = false);

}  // namespace spore::nlp
