// libFuzzer target: the GGUF reader (src/io/gguf_reader.cc) and tokenizers built from GGUF
// metadata (src/nlp/tokenizer/tokenizer_gguf.cc).
//
// Contract checked: any input either parses into tensor infos whose data lie inside the file,
// aligned, with byte counts matching their shapes and types, or throws spore::Error; every small
// tensor of a type Spore reads dequantises (any bit pattern is a block: NOTE [Quantization
// types]) and, for a type with a product, goes through matmul_q without a fault; a tokenizer
// built from the metadata (or a spore::Error) follows, and encodes a fixed text to in-vocabulary
// ids; a model config read from the metadata by the families' read_gguf (or a spore::Error) has
// the sizes the decoder relies on, and its family composes one layer spec per layer.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "nlp/models/family.h"
#include "spore/error.h"
#include "spore/gguf.h"
#include "spore/llm.h"
#include "spore/ops.h"
#include "spore/nlp/model.h"
#include "spore/nlp/tokenizer.h"

namespace {
void require(bool ok) {
  if (!ok) __builtin_trap();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spore;
  try {
    const GgufFile g = GgufFile::from_bytes(std::span<const uint8_t>(data, size), "fuzz");
    require(g.data_offset() % g.alignment() == 0);
    for (const GgufTensorInfo& t : g.tensors()) {
      require(t.offset % g.alignment() == 0);
      require(g.data_offset() + t.offset + t.nbytes <= size);
      const QuantTraits& ti = quant_traits(t.type);
      require(t.numel() / ti.block_size * ti.block_bytes == t.nbytes);
      require(g.tensor_bytes(t.name).size() == t.nbytes);
      // A zero-element tensor may still declare a huge first extent ([2^51, 0]): skip it before
      // sizing a row by that extent (the harness's own allocation, found by this target).
      if (!ti.dequantize || t.dims.empty() || t.numel() == 0 || t.numel() > 4096) continue;
      const int64_t k = (int64_t)t.dims[0], rows = (int64_t)(t.numel() / t.dims[0]);
      const size_t rb = quant_row_bytes(t.type, k);
      std::vector<float> row((size_t)k);
      for (int64_t r = 0; r < rows; ++r) dequantize_row(t.type, g.tensor_bytes(t.name).subspan((size_t)r * rb, rb), row);
      if (ti.activations == QuantActivations::kQ8Groups && k > 0) {
        const Tensor w = reshape(g.tensor(t.name), {rows, (int64_t)rb});
        const Tensor y = matmul_q(full({2, k}, 0.5), w, t.type);
        require(y.shape() == Shape({2, rows}));
      }
    }
    try {
      const nlp::ModelConfig c = nlp::ModelConfig::from_gguf(g);
      require(c.num_layers > 0 && c.head_dim > 0 && c.num_heads % c.num_kv_heads == 0 && c.rope_dim <= c.head_dim);
      const nlp::models::Family* f = nlp::models::find_family(c.family);
      require(f && f->decoder(c).layers.size() == static_cast<size_t>(c.num_layers));
    } catch (const Error&) {
    }
    try {
      const nlp::Tokenizer tok = nlp::Tokenizer::from_gguf(g);
      for (int32_t id : tok.encode("Hello 世界 😀 <s>", true)) require(id >= 0 && id < tok.vocab_size());
    } catch (const Error&) {
    }
  } catch (const Error&) {
  }
  return 0;
}
