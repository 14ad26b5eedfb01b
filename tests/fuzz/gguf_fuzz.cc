// libFuzzer target: the GGUF reader (src/io/gguf_reader.cc) and tokenizers built from GGUF
// metadata (src/nlp/tokenizer/tokenizer_gguf.cc).
//
// Contract checked: any input either parses into tensor infos whose data lie inside the file,
// aligned, with byte counts matching their shapes and types, or throws spore::Error; a tokenizer
// built from the metadata (or a spore::Error) follows, and encodes a fixed text to in-vocabulary
// ids.
#include <cstddef>
#include <cstdint>
#include <span>

#include "spore/error.h"
#include "spore/gguf.h"
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
      const GgmlTypeInfo ti = ggml_type_info(t.type);
      require(t.numel() / ti.block_size * ti.block_bytes == t.nbytes);
      require(g.tensor_bytes(t.name).size() == t.nbytes);
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
