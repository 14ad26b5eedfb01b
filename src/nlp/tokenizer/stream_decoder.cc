// StreamDecoder (NOTE [Streaming detokenisation]).
#include <string>

#include "spore/nlp/tokenizer.h"

namespace spore::nlp {

namespace {
bool ends_incomplete(const std::string& s) {
  // The decoders turn bytes that do not (yet) form a character into U+FFFD at the end.
  return s.size() >= 3 && s.compare(s.size() - 3, 3, "\xEF\xBF\xBD") == 0;
}
}  // namespace

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tokenizer_(tokenizer), skip_special_(skip_special_tokens) {}

std::string StreamDecoder::push(int32_t id) {
  tokenizer_.id_to_token(id);  // kValue for an id outside the vocabulary, before it is kept
  ids_.push_back(id);
  std::span<const int32_t> window(ids_.data() + prefix_, ids_.size() - prefix_);
  std::string text = tokenizer_.decode(window, skip_special_);
  // Emit only when the window grew by text that ends in a complete character; the window keeps
  // the previous piece as context so that decoders that treat the first token specially
  // (Strip, Metaspace) see the same neighbours as in the full decode.
  if (text.size() <= prefix_text_.size() || ends_incomplete(text) ||
      text.compare(0, prefix_text_.size(), prefix_text_) != 0)
    return {};
  std::string fresh = text.substr(prefix_text_.size());
  prefix_ = read_;
  read_ = ids_.size();
  prefix_text_ = tokenizer_.decode(
      std::span<const int32_t>(ids_.data() + prefix_, read_ - prefix_), skip_special_);
  return fresh;
}

std::string StreamDecoder::finish() {
  std::span<const int32_t> window(ids_.data() + prefix_, ids_.size() - prefix_);
  std::string text = tokenizer_.decode(window, skip_special_);
  std::string rest = text.size() > prefix_text_.size() ? text.substr(prefix_text_.size()) : "";
  ids_.clear();
  prefix_ = read_ = 0;
  prefix_text_.clear();
  return rest;
}

}  // namespace spore::nlp
