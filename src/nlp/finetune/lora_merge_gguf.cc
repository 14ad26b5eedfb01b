// `spore merge` from a GGUF base to a GGUF file (NOTE [LoRA merge]): every metadata key copied (the
// tokenizer, chat template and architecture keys with it), general.file_type set for a new type;
// each tensor an adapter leaves alone and whose type stays is copied byte for byte, every other is
// dequantised row by row, updated in float64 and requantised with the quantisers of the one table
// of types (spore convert's). Tensors are produced one at a time while the file is written.
#include <cstring>

#include "nlp/finetune/lora_merge_internal.h"
#include "spore/error.h"
#include "spore/gguf.h"
#include "spore/gguf_writer.h"
#include "spore/nlp/convert.h"
#include "spore/quant.h"

namespace spore::nlp::merge {

namespace {

bool ends_with(const std::string& s, const char* tail) {
  const size_t n = std::strlen(tail);
  return s.size() >= n && s.compare(s.size() - n, n, tail) == 0;
}

// The tensors spore convert gives the requested type: 2-D weights other than norms and routers
// (which it keeps in float32, as llama.cpp's quantizer does).
bool takes_type(const GgufTensorInfo& t) {
  return t.dims.size() == 2 && ends_with(t.name, ".weight") && t.name.find("_norm.weight") == std::string::npos &&
         t.name.find("ffn_gate_inp") == std::string::npos;
}

}  // namespace

void write_gguf(const std::filesystem::path& base, const Plan& plan, const std::filesystem::path& out,
                const MergeOptions& options, MergeReport& report) {
  const GgufFile g(base);
  const bool same = options.type == "same";
  GgufWriter w;
  for (const auto& [key, value] : g.metadata()) {
    if (key == "general.file_type" && !same) continue;
    w.set(key, value);  // general.alignment too: the writer takes it as its alignment
  }
  if (!same) w.set_u32("general.file_type", convert_file_type(options.type));
  bool tied = true;  // no output.weight: the embedding is also the head (convert_matrix_type's rule)
  for (const GgufTensorInfo& t : g.tensors()) tied = tied && t.name != "output.weight";
  const int64_t layers = g.contains(g.get_string("general.architecture") + ".block_count")
                             ? g.get_int(g.get_string("general.architecture") + ".block_count")
                             : 0;
  const size_t total = g.tensors().size();
  size_t index = 0;
  for (const GgufTensorInfo& t : g.tensors()) {
    const auto found = plan.updates.find(t.name);
    const std::vector<Update>* updates = found == plan.updates.end() ? nullptr : &found->second;
    GgmlType to = t.type;
    if (!same && takes_type(t)) {
      std::string why;
      to = convert_matrix_type(options.type, t.name, t.dims[0], layers, tied, &why);
      if (!why.empty()) report.notes.push_back(t.name + ": " + why);
    }
    const std::string name = t.name;
    const size_t my_index = ++index;
    auto progress = options.progress;
    ++report.tensors;
    if (!updates && to == t.type) {
      w.add_tensor(name, t.type, t.dims, [g, name, my_index, total, progress](FileSink& sink) {
        if (progress) progress(my_index, total, name);
        sink.write(g.tensor_bytes(name));
      });
      continue;
    }
    if (updates) ++report.merged_tensors;
    if (!quant_traits(t.type).dequantize)
      throw Error(ErrorCode::kUnsupported, "merge: \"" + name + "\" is " + quant_traits(t.type).name +
                                               ", which Spore cannot dequantise to update or retype");
    if (!quant_traits(to).quantize)
      throw Error(ErrorCode::kUnsupported, "merge: \"" + name + "\" is " + quant_traits(to).name +
                                               ", which Spore has no quantiser for; pass --type q8_0 (or f16, q4_k, ...)");
    const int64_t cols = (int64_t)t.dims[0], rows = cols > 0 ? (int64_t)(t.numel() / t.dims[0]) : 0;
    if (updates && t.dims.size() != 2)
      throw Error(ErrorCode::kShape, "merge: \"" + name + "\" has " + std::to_string(t.dims.size()) +
                                         " dimensions; an adapter updates a matrix");
    const GgmlType from = t.type;
    w.add_tensor(name, to, t.dims, [g, name, from, to, rows, cols, updates, my_index, total, progress](FileSink& sink) {
      if (progress) progress(my_index, total, name);
      const std::span<const uint8_t> bytes = g.tensor_bytes(name);
      const size_t in_row = quant_row_bytes(from, cols);
      std::vector<float> v((size_t)(rows * cols));
      for (int64_t r = 0; r < rows; ++r)
        dequantize_row(from, bytes.subspan((size_t)r * in_row, in_row), std::span<float>(v).subspan((size_t)(r * cols), (size_t)cols));
      if (updates) apply_updates(name, v, rows, cols, *updates);
      std::vector<uint8_t> row(quant_row_bytes(to, cols));
      for (int64_t r = 0; r < rows; ++r) {
        quantize_row(to, std::span<const float>(v).subspan((size_t)(r * cols), (size_t)cols), row);
        sink.write(row);
      }
    });
  }
  w.write(out);
}

}  // namespace spore::nlp::merge
