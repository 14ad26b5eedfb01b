// `spore merge` (issue 30, NOTE [LoRA merge] in docs/design.md): LoRA adapters baked into a new
// model. W' = W + sum over adapters of scale * (alpha / r) * B A on every projection an adapter
// updates, accumulated in float64 and rounded once to float32, then written in the requested type
// (a quantised base is dequantised, updated and requantised with the quantisers `spore convert`
// uses). Everything else of the base - tokenizer, chat template, architecture keys, the other
// tensors - is carried over. The base is a GGUF file or a Hugging Face directory; the output is a
// GGUF file (a path ending in .gguf) or a Hugging Face directory, written atomically, never over an
// input.
//
//   spore::nlp::merge_lora("models/smollm2-135m-instruct", {{"runs/lora1", 1.0}}, "merged.gguf",
//                          {.type = "q8_0"});
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace spore::nlp {

// One adapter and its strength (the command line's --lora PATH[:SCALE]).
struct MergeAdapter {
  std::filesystem::path path;  // a PEFT directory (or its adapter_config.json) or a GGUF adapter
  double scale = 1;
};

struct MergeOptions {
  // f32 | f16 | bf16 | q8_0 | q4_0 | q4_k for the matrices (norms and other vectors keep their
  // type in a GGUF), or "same": every tensor keeps its own type.
  std::string type = "same";
  // Called once per tensor as it is written (progress lines); may be empty.
  std::function<void(size_t done, size_t total, const std::string& tensor)> progress;
};

struct MergeReport {
  std::string family;       // "llama", ...
  std::string base_format;  // "gguf" or "safetensors"
  std::string out_format;   // "gguf" or "safetensors"
  int64_t tensors = 0;         // written
  int64_t merged_tensors = 0;  // updated by an adapter
  int64_t adapter_pairs = 0;   // A/B pairs applied, over all adapters
  uint64_t out_bytes = 0;
  std::vector<std::string> notes;  // per-tensor type fallbacks, as spore convert reports them
};

// Merges `adapters` into `base` and writes `out`. Errors (nothing is written when one is thrown):
// kValue for an unknown type, no adapter, an out path that is an input (or holds one) or a
// non-empty directory, a quantised type for a Hugging Face directory; kIO naming the folder
// when out's folder does not exist or is not writable; kUnsupported for a GGUF base to a Hugging
// Face directory and for a tensor whose type has no quantiser under "same"; the adapter loader's
// errors (kShape naming the tensor whose shape does not fit, kValue for another architecture);
// kFormat naming the tensor when an adapter updates one the base does not have; kShape naming it
// when the base's tensor is not the [out, in] the adapter's pair is.
MergeReport merge_lora(const std::filesystem::path& base, const std::vector<MergeAdapter>& adapters,
                       const std::filesystem::path& out, const MergeOptions& options = {});

}  // namespace spore::nlp
