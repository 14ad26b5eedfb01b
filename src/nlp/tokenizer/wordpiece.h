// WordPiece (BERT), as llama.cpp's "bert" GGUF vocabulary stores it (NOTE [GGUF pre-tokenizers]):
// word-initial pieces carry SentencePiece's visible space "▁" (the converter's rewrite of BERT's
// unmarked pieces) and continuation pieces are bare (BERT's "##" dropped). A word is covered
// greedily from the left by the longest piece at each position; a word with a position no piece
// covers becomes the unknown token as a whole.
// Hugging Face's tokenizer.json form (`hf`): word-initial pieces are bare, continuation pieces
// carry `continuing_prefix` ("##"), and a word of more than `max_word_chars` characters is the
// unknown token (tokenizers' WordPiece model).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nlp/tokenizer/bpe.h"

namespace spore::nlp::detail {

struct WordPieceModel {
  StringIdMap vocab;
  size_t max_piece_bytes = 0;
  std::optional<int32_t> unk;
  bool hf = false;
  std::string continuing_prefix;
  size_t max_word_chars = 100;
  // Appends the ids of one pre-tokenized word (without its "▁").
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

 private:
  void encode_word_hf(std::string_view word, std::vector<int32_t>& out) const;
};

}  // namespace spore::nlp::detail
