// WordPiece (BERT), as llama.cpp's "bert" GGUF vocabulary stores it (NOTE [GGUF pre-tokenizers]):
// word-initial pieces carry SentencePiece's visible space "▁" (the converter's rewrite of BERT's
// unmarked pieces) and continuation pieces are bare (BERT's "##" dropped). A word is covered
// greedily from the left by the longest piece at each position; a word with a position no piece
// covers becomes the unknown token as a whole.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "nlp/tokenizer/bpe.h"

namespace spore::nlp::detail {

struct WordPieceModel {
  StringIdMap vocab;
  size_t max_piece_bytes = 0;
  std::optional<int32_t> unk;
  // Appends the ids of one pre-tokenized word (without its "▁").
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;
};

}  // namespace spore::nlp::detail
