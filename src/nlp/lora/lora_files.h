// The two adapter formats read into one form (NOTE [LoRA adapters]): pairs of A / B matrices by
// the base tensor they update, in the file's own spelling (PEFT: Hugging Face names, GGUF:
// llama.cpp's), before they are matched to a model (lora_bind.cc). Split from the loading so that
// the fuzz target reaches the parsers from bytes.
#pragma once
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "spore/tensor.h"

namespace spore {
class GgufFile;
struct SafeTensors;
}  // namespace spore

namespace spore::nlp::lora {

struct RawPair {
  std::string a_name, b_name;  // the file's tensor names, for messages
  Tensor a, b;                 // float32 [rank, in] and [out, rank]
  double scale = 1;            // the format's alpha / rank rule, applied
};

struct RawAdapter {
  std::string format;  // "gguf" or "peft"
  std::string source;  // the file, for messages
  std::string config_source;  // PEFT's adapter_config.json
  std::string arch;    // GGUF general.architecture ("" for PEFT, which does not say)
  double alpha = 0;
  // By the base tensor's name: "model.layers.0.self_attn.q_proj.weight" (PEFT) or
  // "blk.0.attn_q.weight" (GGUF).
  std::map<std::string, RawPair> pairs;
};

// adapter_config.json, the fields inference needs (the rest - dropout, init, task - do not change
// what a trained adapter computes).
struct PeftConfig {
  std::string source;
  int64_t r = 0;
  double lora_alpha = 0;
  bool use_rslora = false;
  // target_modules as a list of module names; empty with `targets_regex` set when it is a string
  // (a regular expression, which PEFT matches against full module names: the tensors decide).
  std::vector<std::string> target_modules;
  std::optional<std::string> targets_regex;
  // alpha_pattern: module-name suffix -> alpha (rank_pattern needs nothing: the rank is A's).
  std::map<std::string, double> alpha_pattern;
};

// kFormat naming the file and field when malformed; kUnsupported for what inference here does not
// apply (peft_type other than LORA, use_dora, fan_in_fan_out, lora_bias, modules_to_save,
// regular-expression pattern keys). (Fuzzed.)
PeftConfig parse_peft_config(const std::string& text, const std::string& source);

// The pairs of adapter_model.safetensors (tensors already read), with PEFT's scale
// (alpha / r, alpha / sqrt(r) under use_rslora, alpha from alpha_pattern where a key matches).
// kFormat for names that are not "base_model.model.<module>.lora_A/B.weight" or a half without
// its other, kUnsupported for embedding adapters and DoRA magnitudes, kDType for integer tensors.
// (Fuzzed.)
RawAdapter read_peft_tensors(const PeftConfig& config, const SafeTensors& tensors, const std::string& source);

// A GGUF adapter as llama.cpp's convert_lora_to_gguf.py writes it and llama-adapter.cpp reads it:
// general.type "adapter", adapter.type "lora", adapter.lora.alpha, tensors "<base>.lora_a"
// ([rank, in]) and "<base>.lora_b" ([out, rank]), any type Spore dequantizes; scale alpha / rank
// (1 when alpha is 0, as llama.cpp). kFormat naming the key or tensor. (Fuzzed.)
RawAdapter read_gguf_adapter(const GgufFile& gguf);

}  // namespace spore::nlp::lora

namespace spore::nlp {
struct ModelConfig;
class LoraAdapter;
enum class LoraProjection;
namespace models {
struct TensorName;
struct WeightNames;
}  // namespace models
}  // namespace spore::nlp

namespace spore::nlp::lora {

// Matches the pairs to the model's projections through the family's one name table (the
// spelling of the adapter's format), checks the shapes against the config, and reorders llama's
// q/k rows between Hugging Face's order and the GGUF converter's where the adapter and the base
// differ (`gguf_base`: the weights come from a GGUF file). kValue for a GGUF adapter of another
// architecture, kShape for shapes that do not fit, kUnsupported for a tensor of the model this
// engine does not adapt (naming those it does), kFormat for a name that is no tensor of the
// family. `targets` (PEFT's target_modules, may be empty) must be modules of the family.
LoraAdapter bind_adapter(RawAdapter raw, const std::vector<std::string>& targets, const ModelConfig& config,
                         bool gguf_base);

// The adapter at `path` (a GGUF adapter file, a PEFT directory or its adapter_config.json) read
// and bound to a model of `config` whose weights come from a GGUF file when `gguf_base`: load_lora
// without a loaded model (spore merge reads only the base's config). The errors of load_lora.
LoraAdapter load_adapter(const std::filesystem::path& path, const ModelConfig& config, bool gguf_base);

// The family's table entry of projection p (its Hugging Face and GGUF spellings).
const models::TensorName& projection_tensor(const models::WeightNames& names, LoraProjection p);

}  // namespace spore::nlp::lora
