// Pieces of `spore merge` (include/spore/nlp/lora_merge.h, NOTE [LoRA merge]), one file each:
// which base tensors the adapters update and the float64 update itself (lora_merge.cc), the GGUF
// writer (lora_merge_gguf.cc), the Hugging Face directory writer (lora_merge_hf.cc).
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "spore/dtype.h"
#include "spore/nlp/lora.h"
#include "spore/nlp/lora_merge.h"

namespace spore::nlp::merge {

// One pair an adapter adds to a base tensor: W += scale * B A.
struct Update {
  const LoraPair* pair = nullptr;
  double scale = 1;  // the use's scale times the pair's alpha / r
};

// What the adapters do to the base, by the base's own tensor name.
struct Plan {
  std::vector<LoraAdapter> adapters;  // the pairs Update points into
  std::map<std::string, std::vector<Update>> updates;
  int64_t pairs = 0;
};

// W row-major float32 [rows, cols] (`name` for messages) with every update added, each element
// accumulated in float64 and rounded once. kShape naming the tensor when a pair is not [rows, r]
// x [r, cols].
void apply_updates(const std::string& name, std::span<float> w, int64_t rows, int64_t cols,
                   const std::vector<Update>& updates);

// GGUF base -> GGUF file: the metadata copied (general.file_type set for a new type), tensors an
// adapter does not touch copied byte for byte when their type stays, the others dequantised,
// updated and requantised. `type` is MergeOptions::type, already checked.
void write_gguf(const std::filesystem::path& base, const Plan& plan, const std::filesystem::path& out,
                const MergeOptions& options, MergeReport& report);

// Hugging Face base -> the directory `dir` (which exists and is empty): model.safetensors with
// every tensor updated and cast to `dtype` (nullopt: each keeps its own; integer tensors always
// do), config.json's dtype set to match, the other files of the base copied (not its weights or
// its artifact lock). Returns the dtype the floating tensors of the base share (float32 when they
// differ), which a GGUF written from it under "same" takes.
DType write_hf_dir(const std::filesystem::path& base, const Plan& plan, const std::filesystem::path& dir,
                   std::optional<DType> dtype, MergeReport& report);

}  // namespace spore::nlp::merge
