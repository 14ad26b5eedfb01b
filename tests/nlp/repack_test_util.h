// Bytes a GGUF load repacks into owned memory (NOTE [Repacked weights]): its 2-D q4_0 / q5_0 /
// q8_0 tensors of whole 8-row groups that nlp::repacked_at_load picks, read off the file itself, so
// tests can state which weights stay in the mapping.
#pragma once
#include <filesystem>

#include "spore/gguf.h"
#include "nlp/model_internal.h"
#include "spore/llm.h"

namespace spore::test {

inline uint64_t repacked_bytes(const std::filesystem::path& gguf, bool ggml_numerics = false) {
  uint64_t n = 0;
  const GgufFile g(gguf);
  for (const auto& t : g.tensors())
    if (t.dims.size() == 2 && nlp::repacked_at_load(t.type, (int64_t)t.dims[1], ggml_numerics)) n += t.nbytes;
  return n;
}

}  // namespace spore::test
