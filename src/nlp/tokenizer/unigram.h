// SentencePiece's Unigram model (T5 and its kin; llama.cpp's vocabulary type "ugm", GGUF
// tokenizer.ggml.model "t5"; Hugging Face's "Unigram" model) and the normaliser SentencePiece
// ships with it, the precompiled charsmap (NOTE [Unigram tokenizers]).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nlp/tokenizer/bpe.h"

namespace spore::nlp::detail {

// SentencePiece's precompiled charsmap: a little-endian u32 byte count of a double array
// (darts-clone's XOR-compressed units, one u32 each) mapping UTF-8 prefixes to offsets into the
// replacement strings that follow it ('\0'-terminated). NFKC-style normalisation as a table.
class PrecompiledCharsmap {
 public:
  // kFormat naming `where` when the blob's sizes do not add up.
  PrecompiledCharsmap(std::string_view blob, const std::string& where);
  // The replacement of the longest prefix of `text` the table holds, and that prefix's length
  // (0: none). kFormat when a unit or a replacement offset points outside the blob.
  size_t longest_prefix(std::string_view text, std::string_view& replacement) const;
  // Every character replaced (longest prefix first; a character the table does not hold is kept,
  // an invalid byte becomes U+FFFD), as SentencePiece's and Hugging Face's Precompiled do.
  std::string normalize(std::string_view text) const;

 private:
  std::vector<uint32_t> units_;
  std::string replacements_;
  std::string where_;
};

// SentencePiece's whole normaliser as llama.cpp's "ugm" vocabulary runs it: the charsmap, then
// spaces escaped as "▁", a "▁" before the first word (add_dummy_prefix), runs of spaces merged and
// spaces at the ends dropped (remove_extra_whitespaces: then every word gets its "▁"). Text that
// starts with a user-defined piece is kept as it is.
struct SentencePieceNormalizer {
  std::shared_ptr<const PrecompiledCharsmap> charsmap;  // none: characters are kept
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
  std::vector<std::string> user_defined;
  std::string normalize(std::string_view text) const;
};

// The Unigram model: the segmentation of a text into pieces with the highest total score
// (log-probability; user-defined pieces score 0), a character no piece covers taken as the
// unknown piece at the lowest score minus 10, and runs of unknowns merged into one.
struct UnigramModel {
  StringIdMap pieces;
  std::vector<double> scores;      // by id
  std::vector<uint8_t> user_defined;  // by id
  size_t max_piece_bytes = 0;
  int32_t unk = 0;
  double unk_score = 0;
  // Appends the ids of `text` (already normalised, "▁" for spaces).
  void encode(std::string_view text, std::vector<int32_t>& out) const;
};

// Standard base64 (RFC 4648, padding optional) to bytes; nullopt when malformed.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace spore::nlp::detail
