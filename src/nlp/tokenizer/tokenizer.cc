// Tokenizer: the encode and decode pipelines over a loaded Impl (NOTE [Tokenizers]).
#include "spore/nlp/tokenizer.h"

#include <string>

#include "nlp/tokenizer/pipeline.h"
#include "nlp/tokenizer/utf8.h"
#include "spore/error.h"

namespace spore::nlp {

using namespace detail;

void Tokenizer::Impl::finish() {
  int32_t size = (int32_t)tokens.size();
  for (const AddedToken& t : added) size = std::max(size, t.id + 1);
  tokens.resize(size);
  special.assign(size, 0);
  for (const AddedToken& t : added) {
    // Hugging Face keeps a normalized added token under its normalized text (what the model
    // sees), and that is what decoding it gives back.
    tokens[t.id] = t.content;
    if (t.normalized) normalize(normalizers, tokens[t.id]);
    if (t.special) special[t.id] = 1;
  }
  token_ids.reserve(size);
  for (int32_t id = 0; id < size; ++id)
    if (!tokens[id].empty()) token_ids.emplace(tokens[id], id);
  // Added tokens win over a model token with the same text, as in Hugging Face's token_to_id.
  for (const AddedToken& t : added) token_ids[t.content] = t.id;
  raw_matcher.build(added, false, nullptr);
  normalized_matcher.build(added, true, &normalizers);
}

namespace {

void encode_plain(const Tokenizer::Impl& t, std::string_view raw, bool first,
                  std::vector<int32_t>& out) {
  std::string text(raw);
  normalize(t.normalizers, text);
  auto model_word = [&](std::string_view word) {
    if (t.wordpiece)
      t.wordpiece->encode_word(word, out);
    else if (t.unigram)
      t.unigram->encode(word, out);
    else
      t.model.encode_word(word, out);
  };
  auto plain = [&](std::string_view piece, bool piece_first) {
    pre_tokenize(t.pre_tokenizers, piece, piece_first, model_word);
  };
  if (t.normalized_matcher.empty()) {
    plain(text, first);
    return;
  }
  for (const auto& p : t.normalized_matcher.split(text)) {
    if (p.id >= 0)
      out.push_back(p.id);
    else
      plain(std::string_view(text).substr(p.begin, p.end - p.begin), first && p.begin == 0);
  }
}

}  // namespace

std::vector<int32_t> Tokenizer::encode(std::string_view text, const EncodeOptions& options) const {
  const Impl& t = *impl_;
  std::string repaired;
  const size_t bad = find_invalid_utf8(text);
  if (bad != kValidUtf8) {
    if (!options.replace_invalid_utf8)
      throw Error(ErrorCode::kValue,
                  "encode: the text is not valid UTF-8 at byte offset " + std::to_string(bad) +
                      " (byte 0x" + "0123456789abcdef"[(unsigned char)text[bad] >> 4] +
                      "0123456789abcdef"[(unsigned char)text[bad] & 15] +
                      "); fix the input or set EncodeOptions::replace_invalid_utf8 to replace "
                      "invalid bytes with U+FFFD");
    repaired = utf8_lossy(text);
    text = repaired;
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  if (t.raw_matcher.empty()) {
    encode_plain(t, text, true, ids);
  } else {
    for (const auto& p : t.raw_matcher.split(text)) {
      if (p.id >= 0)
        ids.push_back(p.id);
      else
        encode_plain(t, text.substr(p.begin, p.end - p.begin), p.begin == 0, ids);
    }
  }
  if (options.add_special_tokens && t.post) {
    std::vector<int32_t> out;
    out.reserve(ids.size() + t.post->single.size());
    for (int32_t id : t.post->single) {
      if (id < 0)
        out.insert(out.end(), ids.begin(), ids.end());
      else
        out.push_back(id);
    }
    return out;
  }
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  const Impl& t = *impl_;
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    const std::string& tok = id_to_token(id);
    if (skip_special_tokens && t.special[id]) continue;
    tokens.push_back(tok);
  }
  return decode_tokens(t.decoders, t.has_decoder, std::move(tokens));
}

int32_t Tokenizer::vocab_size() const { return (int32_t)impl_->tokens.size(); }

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  auto it = impl_->token_ids.find(token);
  if (it == impl_->token_ids.end()) return std::nullopt;
  return it->second;
}

const std::string& Tokenizer::id_to_token(int32_t id) const {
  if (id < 0 || id >= vocab_size())
    throw Error(ErrorCode::kValue, "token id " + std::to_string(id) +
                                       " is outside the vocabulary of " +
                                       std::to_string(vocab_size()) + " tokens (ids 0.." +
                                       std::to_string(vocab_size() - 1) + ") of " + impl_->source);
  return impl_->tokens[id];
}

bool Tokenizer::is_special(int32_t id) const {
  id_to_token(id);
  return impl_->special[id] != 0;
}

std::optional<int32_t> Tokenizer::bos_id() const { return impl_->bos; }
std::optional<int32_t> Tokenizer::eos_id() const { return impl_->eos; }
std::optional<int32_t> Tokenizer::pad_id() const { return impl_->pad; }

}  // namespace spore::nlp
