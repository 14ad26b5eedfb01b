// The stages of a tokenizer as tokenizer.json describes them (NOTE [Tokenizers]): normalizers,
// pre-tokenizers, the model, the post-processor and the decoders, plus the added tokens matched
// in the text before all of them. Tokenizer::Impl holds one pipeline.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "nlp/tokenizer/bpe.h"
#include "nlp/tokenizer/regex.h"
#include "nlp/tokenizer/unigram.h"
#include "nlp/tokenizer/wordpiece.h"
#include "spore/nlp/tokenizer.h"

namespace spore::nlp::detail {

// ---- normalizers --------------------------------------------------------------------------------
enum class UnicodeForm { kNFC, kNFKC, kNFD, kNFKD };
struct NormUnicode { UnicodeForm form; };
struct NormPrepend { std::string text; };
struct NormReplace { Regex pattern; std::string content; };
struct NormLowercase {};
struct NormStrip { bool left, right; };
// Hugging Face's Precompiled: SentencePiece's charsmap alone (spaces are the pre-tokenizers').
struct NormPrecompiled { std::shared_ptr<const PrecompiledCharsmap> charsmap; };
// llama.cpp's "ugm": SentencePiece's whole normaliser, spaces escaped as "▁".
struct NormSentencePiece { SentencePieceNormalizer normalizer; };
// A space on each side of every match (BertNormalizer's handle_chinese_chars).
struct NormPad { Regex pattern; };
using NormStep = std::variant<NormUnicode, NormPrepend, NormReplace, NormLowercase, NormStrip, NormPrecompiled,
                              NormSentencePiece, NormPad>;
// Applies the steps in order to `text` in place.
void normalize(const std::vector<NormStep>& steps, std::string& text);

// ---- pre-tokenizers -----------------------------------------------------------------------------
enum class SplitBehavior { kIsolated, kRemoved, kMergedWithPrevious, kMergedWithNext, kContiguous };
struct PreSplit { Regex pattern; SplitBehavior behavior; bool invert; };
// Hugging Face's Whitespace pre-tokenizer, `\w+|[^\w\s]+`, with Oniguruma's Unicode \w (the
// words it keeps; whitespace between them is dropped). Oniguruma's \w is UTS #18's: Alphabetic,
// marks, decimal digits, connector punctuation and the joiners, where PCRE2's is letters and
// numbers only, which cuts words at combining marks (Khmer, Devanagari, a decomposed accent).
inline constexpr const char* kWhitespaceWords =
    "[\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}]+|[^\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}\\s]+";
// Byte-level: optional prefix space, optional GPT-2 regex; the byte mapping itself is the model's.
struct PreByteLevel { bool add_prefix_space; std::optional<Regex> regex; };
enum class PrependScheme { kAlways, kFirst, kNever };
struct PreMetaspace { std::string replacement; PrependScheme scheme; bool split; };
struct PreDigits { bool individual; };
using PreStep = std::variant<PreSplit, PreByteLevel, PreMetaspace, PreDigits>;
// Runs the steps over one segment; emit(word) receives each pre-token in order. `first` is
// whether the segment starts the input (Metaspace's "first" prepend scheme).
void pre_tokenize(const std::vector<PreStep>& steps, std::string_view segment, bool first,
                  const std::function<void(std::string_view)>& emit);

// ---- decoders -----------------------------------------------------------------------------------
struct DecByteLevel {};
struct DecByteFallback {};
struct DecFuse {};
struct DecStrip { std::string content; size_t start, stop; };
struct DecReplace { std::string pattern, content; };
struct DecMetaspace { std::string replacement; bool strip_first_space; };
// BERT's: continuation pieces lose `prefix`, other pieces after the first get a space before
// them; `cleanup` undoes the spaces BERT's tokenization put before punctuation and contractions.
struct DecWordPiece { std::string prefix; bool cleanup; };
using DecStep = std::variant<DecByteLevel, DecByteFallback, DecFuse, DecStrip, DecReplace,
                             DecMetaspace, DecWordPiece>;
// Hugging Face's decode_chain over the tokens, then the join.
std::string decode_tokens(const std::vector<DecStep>& steps, bool has_decoder,
                          std::vector<std::string> tokens);

// ---- added tokens -------------------------------------------------------------------------------
struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false, lstrip = false, rstrip = false, single_word = false, normalized = false;
};
// One set of patterns matched leftmost-longest (Hugging Face's Aho-Corasick MatchKind).
class AddedTokenMatcher {
 public:
  void build(const std::vector<AddedToken>& tokens, bool normalized_set,
             const std::vector<NormStep>* normalizer);
  bool empty() const { return patterns_.empty(); }
  struct Piece {
    size_t begin, end;
    int32_t id;  // -1: plain text
  };
  // The text cut into added tokens (with their lstrip/rstrip/single_word rules) and the rest.
  std::vector<Piece> split(std::string_view text) const;

 private:
  struct Pattern {
    std::string text;
    const AddedToken* token;
  };
  std::vector<Pattern> patterns_;
  std::vector<std::vector<int32_t>> by_first_byte_ = std::vector<std::vector<int32_t>>(256);
};

// ---- post-processor -----------------------------------------------------------------------------
// The ids around the sequence for a single input with add_special_tokens; -1 marks the sequence.
struct PostTemplate {
  std::vector<int32_t> single;
};

}  // namespace spore::nlp::detail

namespace spore::nlp {

struct Tokenizer::Impl {
  std::string source;
  std::vector<std::string> tokens;  // by id: model vocabulary and added tokens
  std::vector<uint8_t> special;     // by id
  detail::StringIdMap token_ids;
  detail::BpeModel model;
  std::optional<detail::WordPieceModel> wordpiece;  // BERT (GGUF or tokenizer.json): used instead of `model`
  std::optional<detail::UnigramModel> unigram;      // SentencePiece Unigram: used instead of `model`
  std::vector<detail::NormStep> normalizers;
  std::vector<detail::PreStep> pre_tokenizers;
  bool has_decoder = false;
  std::vector<detail::DecStep> decoders;
  std::vector<detail::AddedToken> added;
  detail::AddedTokenMatcher raw_matcher, normalized_matcher;
  std::optional<detail::PostTemplate> post;
  std::optional<int32_t> bos, eos, pad;

  // After the tables are filled: the matchers and the id tables.
  void finish();
};

}  // namespace spore::nlp
