// LoRA adapters at inference (NOTE [LoRA adapters] in docs/design.md): an adapter is loaded
// against one model, in either real format - llama.cpp's GGUF adapter (general.type = adapter,
// adapter.type = lora, <base tensor>.lora_a / .lora_b, as convert_lora_to_gguf.py writes it) or
// PEFT's directory (adapter_config.json + adapter_model.safetensors) - and applied without merging:
// y = W x + scale * B (A x) on each projection it has, whatever W's type. Each sequence chunk of a
// forward pass names its own adapters (SequenceChunk::lora), so sequences of one batch may run
// different adapters over one base.
//
//   auto m = spore::nlp::load_model("tests/fixtures/llm/llama/hf");
//   auto a = spore::nlp::load_lora("adapter_dir", m);          // or "adapter.gguf"
//   std::vector<spore::nlp::LoraUse> use{{a, 1.0}};
//   chunk.lora = use;                                          // this sequence runs the adapter
#pragma once
#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "spore/nlp/model.h"
#include "spore/tensor.h"

namespace spore::nlp {

// The projections an adapter may carry (each a linear map of the decoder's layers).
enum class LoraProjection { kQ, kK, kV, kO, kGate, kUp, kDown, kQkv, kGateUp, kCount };
// "q", "k", ..., "gate_up"
const char* lora_projection_name(LoraProjection p);

// One projection's update: delta W = scale * B A, A float32 [rank, in], B float32 [out, rank], in
// the base model's row order (llama's GGUF q/k rows permuted where the base is such a file).
struct LoraPair {
  Tensor a, b;
  double scale = 1;  // alpha / rank (alpha / sqrt(rank) for PEFT's use_rslora)
  bool defined() const { return a.defined(); }
};

class LoraAdapter {
 public:
  std::filesystem::path path;  // the .gguf file or the PEFT directory
  std::string format;          // "gguf" or "peft"
  double alpha = 0;            // as the file states it
  int64_t max_rank = 0;
  int64_t pairs = 0;           // projections updated
  uint64_t bytes = 0;          // float32 A and B held
  // The model it was loaded for (forward refuses it on another).
  const CausalLM* model = nullptr;
  uint64_t serial = 0;  // unique in the process (load_lora numbers them), for lora_key
  // layers x kCount, undefined where the adapter has nothing.
  std::vector<std::array<LoraPair, static_cast<size_t>(LoraProjection::kCount)>> layers;

  const LoraPair& at(int64_t layer, LoraProjection p) const {
    return layers.at(static_cast<size_t>(layer))[static_cast<size_t>(p)];
  }
};

// An adapter a sequence runs, and its strength (llama.cpp's --lora-scaled / per-request scale):
// the update is scale * LoraPair::scale * B A. Scale 0 is the base model exactly.
struct LoraUse {
  std::shared_ptr<const LoraAdapter> adapter;
  double scale = 1;
};

// Loads `path` (a GGUF adapter file, or a PEFT directory / its adapter_config.json) for `base`.
// Errors name the file and tensor: kFormat for a file that is not an adapter or is malformed,
// kValue for an adapter of another architecture, kShape for A/B shapes that do not fit the base
// (or each other), kUnsupported for targets or options this engine does not apply (embeddings,
// the head, mixture-of-experts or latent projections, DoRA, modules_to_save, ...), naming the
// projections it can.
std::shared_ptr<const LoraAdapter> load_lora(const std::filesystem::path& path, const LoadedModel& base);

// "PATH" or "PATH:SCALE" (the command line's --lora): kValue naming the argument when SCALE is not
// a finite number. A path that itself holds a colon is taken whole unless what follows the last
// colon is a number.
std::pair<std::filesystem::path, double> parse_lora_argument(const std::string& arg);

// A key for the set of adapters that changes a sequence's KV rows (those with a non-zero scale):
// equal keys compute equal rows (the prefix cache reuses rows only under an equal key).
std::string lora_key(const std::vector<LoraUse>& uses);

}  // namespace spore::nlp
