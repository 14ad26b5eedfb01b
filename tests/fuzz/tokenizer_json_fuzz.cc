// libFuzzer target: the tokenizer.json reader (src/nlp/tokenizer/tokenizer_json.cc) and, when a
// file loads, the encoder and decoder over it.
//
// Contract checked: any input either loads or throws spore::Error (never nlohmann's own
// exceptions, a crash or a sanitizer report); a loaded tokenizer encodes a few fixed texts to ids
// inside its vocabulary and decodes them without error.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "spore/error.h"
#include "spore/nlp/tokenizer.h"

namespace {
void require(bool ok) {
  if (!ok) __builtin_trap();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spore;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const nlp::Tokenizer tok = nlp::Tokenizer::from_json(text, "fuzz");
    for (std::string_view s : {"Hello world", " 中文 😀 <s>", "a  b\n\n", ""}) {
      try {
        const std::vector<int32_t> ids = tok.encode(s, true);
        for (int32_t id : ids) require(id >= 0 && id < tok.vocab_size());
        tok.decode(ids);
      } catch (const Error&) {
        // A hostile regex may hit PCRE2's match limit (kValue); that is an answer, not a crash.
      }
    }
  } catch (const Error&) {
  }
  return 0;
}
