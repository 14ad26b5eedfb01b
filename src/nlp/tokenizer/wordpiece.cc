#include "nlp/tokenizer/wordpiece.h"

#include <string>

#include "spore/error.h"

namespace spore::nlp::detail {

void WordPieceModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
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

}  // namespace spore::nlp::detail
