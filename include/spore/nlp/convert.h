// `spore convert`: a Hugging Face model directory to one GGUF file, as llama.cpp's
// convert_hf_to_gguf.py writes it for the llama, qwen2 and qwen3 architectures, and mistral as
// llama (NOTE [GGUF writer], NOTE [Model families] in docs/design.md): the hyperparameters under <arch>.*, the byte-level BPE tokenizer
// under tokenizer.ggml.* with the chat template, and the weights renamed to llama.cpp's tensor
// names (token_embd, blk.N.attn_q, ...), the llama q/k rows permuted the way llama.cpp's converter
// does, quantised on the way. Norms and other 1-D tensors stay F32; a matrix whose rows do not fill
// whole blocks of the requested type falls back (q4_k -> q8_0 -> f16), and the report says which.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "spore/gguf.h"

namespace spore::nlp {

struct ConvertOptions {
  // f32 | f16 | bf16 | q8_0 | q4_0 | q4_1 | q5_0 | q4_k | q6_k | q4_k_m (llama.cpp's mix)
  std::string type = "f16";
  std::string name;          // general.name; the directory's name when empty
  // Called once per tensor as it is written (for progress lines); may be empty.
  std::function<void(size_t done, size_t total, const std::string& tensor)> progress;
};

struct ConvertedTensor {
  std::string name;    // the GGUF name (blk.0.attn_q.weight)
  std::string source;  // the Hugging Face name (model.layers.0.self_attn.q_proj.weight)
  GgmlType type = GgmlType::kF32;
  std::vector<uint64_t> dims;  // GGUF order (ne[0] first)
  std::string fallback;        // why the requested type was not used; empty when it was
};

struct ConvertReport {
  std::string architecture;
  uint64_t parameters = 0, file_bytes = 0;
  size_t vocab_size = 0, merges = 0;
  std::vector<ConvertedTensor> tensors;
};

// Converts `hf_dir` (config.json, model.safetensors or model.safetensors.index.json with its
// shards, tokenizer.json, tokenizer_config.json, generation_config.json) into `out`, written
// atomically. kFormat / kUnsupported / kValue name the file, the field or the tensor and the fix.
ConvertReport convert_hf_to_gguf(const std::filesystem::path& hf_dir, const std::filesystem::path& out,
                                 const ConvertOptions& options = {});

// The type `--type type` gives the matrix `name` (its GGUF name) whose rows hold `cols` values, in
// a model of `layers` layers (tied: the embedding is also the head): the requested type, or
// q4_k_m's choice, then llama.cpp's per-tensor fallback when the rows do not fill its blocks
// (`why` says so). kValue for an unknown type.
GgmlType convert_matrix_type(const std::string& type, const std::string& name, uint64_t cols, int64_t layers,
                             bool tied, std::string* why = nullptr);

// general.file_type (llama.cpp's LlamaFileType) of a model written with `--type type`; kValue for
// an unknown type.
uint32_t convert_file_type(const std::string& type);

}  // namespace spore::nlp
