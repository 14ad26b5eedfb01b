// libFuzzer target: the encoder on arbitrary bytes with a fixed small tokenizer
// (tests/fixtures/tokenizers/tiny: byte-level BPE, NFKC + Lowercase, added tokens with every flag,
// a post-processor), plus the decoder and the streaming decoder over the ids.
//
// Contract checked: invalid UTF-8 throws kValue and nothing else; with replacement on, every input
// encodes to ids inside the vocabulary; the streaming decoder's pieces concatenate to the full
// decode and carry no U+FFFD beyond the full decode's.
#include <cstddef>
#include <cstdint>
#include <string>

#include "spore/error.h"
#include "spore/nlp/tokenizer.h"

namespace {
void require(bool ok) {
  if (!ok) __builtin_trap();
}
size_t count_fffd(const std::string& s) {
  size_t n = 0;
  for (size_t p = s.find("\xEF\xBF\xBD"); p != std::string::npos; p = s.find("\xEF\xBF\xBD", p + 1)) ++n;
  return n;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spore;
  static const nlp::Tokenizer tok =
      nlp::Tokenizer::from_file(std::string(SPORE_SOURCE_DIR) + "/tests/fixtures/tokenizers/tiny");
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    tok.encode(text);
  } catch (const Error& e) {
    require(e.code() == ErrorCode::kValue);
  }
  nlp::EncodeOptions o;
  o.replace_invalid_utf8 = true;
  o.add_special_tokens = size % 2 == 1;
  const std::vector<int32_t> ids = tok.encode(text, o);
  for (int32_t id : ids) require(id >= 0 && id < tok.vocab_size());
  const std::string full = tok.decode(ids);
  nlp::StreamDecoder stream(tok);
  std::string joined;
  size_t fffd = 0;
  for (int32_t id : ids) {
    const std::string piece = stream.push(id);
    fffd += count_fffd(piece);
    joined += piece;
  }
  const std::string rest = stream.finish();
  fffd += count_fffd(rest);
  joined += rest;
  require(joined == full);
  require(fffd <= count_fffd(full));
  return 0;
}
