#include "nlp/tokenizer/wordpiece.h"

#include <string>

#include "spore/error.h"

namespace spore::nlp::detail {

namespace {

size_t utf8_chars(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace

void WordPieceModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (hf) {
    encode_word_hf(word, out);
    return;
  }
  const std::string w = "\xE2\x96\x81" + std::string(word);
  const size_t start = out.size();
  for (size_t i = 0; i < w.size();) {
    size_t len = std::min(max_piece_bytes, w.size() - i);
    for (; len > 0; --len) {
      auto it = vocab.find(std::string_view(w).substr(i, len));
      if (it != vocab.end()) {
        out.push_back(it->second);
        break;
      }
    }
    if (len == 0) {  // nothing covers position i: the whole word is unknown
      out.resize(start);
      break;
    }
    i += len;
  }
  if (out.size() == start) {
    if (!unk)
      throw Error(ErrorCode::kValue, "WordPiece: no piece covers the word '" + std::string(word) +
                                         "' and the vocabulary has no unknown token (tokenizer.ggml.unknown_token_id)");
    out.push_back(*unk);
  }
}

// Longest piece first at each position (a byte span a vocabulary entry matches is whole
// characters: entries are valid UTF-8), continuation pieces looked up with their prefix.
void WordPieceModel::encode_word_hf(std::string_view word, std::vector<int32_t>& out) const {
  const size_t start = out.size();
  std::string key;
  bool covered = utf8_chars(word) <= max_word_chars;
  for (size_t i = 0; covered && i < word.size();) {
    const std::string_view prefix = i == 0 ? std::string_view() : std::string_view(continuing_prefix);
    size_t len = std::min(word.size() - i, max_piece_bytes >= prefix.size() ? max_piece_bytes - prefix.size() : 0);
    for (; len > 0; --len) {
      key.assign(prefix);
      key.append(word.substr(i, len));
      if (auto it = vocab.find(key); it != vocab.end()) {
        out.push_back(it->second);
        break;
      }
    }
    if (len == 0) covered = false;
    i += len;
  }
  if (!covered) {
    out.resize(start);
    if (!unk)
      throw Error(ErrorCode::kValue, "WordPiece: no piece covers the word '" + std::string(word) +
                                         "' and the vocabulary has no unknown token (model.unk_token)");
    out.push_back(*unk);
  }
}

}  // namespace spore::nlp::detail
