// Tokenizer::from_gguf: the same pipelines built from llama.cpp's `tokenizer.ggml.*` metadata.
//   llama: SentencePiece BPE merged by score (not merges), byte fallback, "▁" for spaces;
//   gpt2:  byte-level BPE merged by rank, the pre-tokenizer regexes chosen by tokenizer.ggml.pre
//          (gguf_pre_table.cc).
#include <cmath>
#include <limits>
#include <memory>

#include "nlp/tokenizer/gguf_pre_table.h"
#include "nlp/tokenizer/pipeline.h"
#include "nlp/tokenizer/utf8.h"
#include "nlp/tokenizer/wordpiece.h"
#include "spore/error.h"
#include "spore/gguf.h"

namespace spore::nlp {

using namespace detail;

namespace {

// llama.cpp's token types (llama_token_type).
enum TokenType : int64_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

const char kSpace[] = "\xE2\x96\x81";  // U+2581, SentencePiece's visible space

std::optional<int32_t> optional_id(const GgufFile& g, const char* key, size_t vocab) {
  const GgufValue* v = g.find(key);
  if (!v) return std::nullopt;
  const int64_t id = g.get_int(key);
  if (id == -1) return std::nullopt;  // llama.cpp's "none"
  if (id < 0 || (uint64_t)id >= vocab)
    throw Error(ErrorCode::kFormat, "GGUF file '" + g.source() + "': metadata '" + key + "' is " +
                                        std::to_string(id) + ", outside the vocabulary of " +
                                        std::to_string(vocab) + " tokens");
  return (int32_t)id;
}

bool bool_or(const GgufFile& g, const char* key, bool fallback) {
  return g.find(key) ? g.get_bool(key) : fallback;
}

// tokenizer.ggml.merges ("a b" per line, by rank) into the model; kFormat naming the line.
void read_merges(const GgufFile& g, BpeModel& model) {
  const std::vector<std::string> merges = g.get_strings("tokenizer.ggml.merges");
  model.merges.reserve(merges.size());
  for (size_t k = 0; k < merges.size(); ++k) {
    const std::string& m = merges[k];
    const size_t sp = m.find(' ', 1);
    auto fail = [&](const std::string& why) {
      throw Error(ErrorCode::kFormat, "GGUF file '" + g.source() + "': tokenizer.ggml.merges[" +
                                          std::to_string(k) + "] '" + m + "' " + why);
    };
    if (sp == std::string::npos) fail("is not two tokens separated by a space");
    auto ia = model.vocab.find(std::string_view(m).substr(0, sp));
    auto ib = model.vocab.find(std::string_view(m).substr(sp + 1));
    std::string joined = m.substr(0, sp) + m.substr(sp + 1);
    auto im = model.vocab.find(joined);
    if (ia == model.vocab.end() || ib == model.vocab.end() || im == model.vocab.end())
      fail("names a token that is not in tokenizer.ggml.tokens");
    model.merges.insert(ia->second, ib->second, (int32_t)k, im->second);
  }
}

// SentencePiece's byte fallback: the ids of the byte tokens "<0x00>".."<0xFF>".
void byte_fallback_ids(const std::vector<std::string>& tokens, const std::vector<int64_t>& types, BpeModel& model) {
  for (int b = 0; b < 256; ++b) {
    const std::string name = byte_token(b);
    model.byte_ids[b] = -1;
    for (size_t id = 0; id < tokens.size() && model.byte_ids[b] < 0; ++id)
      if (types[id] == kByte && tokens[id] == name) model.byte_ids[b] = (int32_t)id;
  }
}

// BERT's pipeline as llama.cpp's WordPiece session runs it: NFD with accents (Mn) dropped,
// lower case, control characters removed; words split at whitespace (dropped) and around each
// punctuation mark, ASCII symbol and CJK ideograph; then WordPiece.
void build_wordpiece(const GgufFile& g, Tokenizer::Impl& t, StringIdMap vocab, std::optional<int32_t> unk) {
  const std::string field = "GGUF file '" + g.source() + "': bert tokenizer";
  t.normalizers.emplace_back(NormUnicode{UnicodeForm::kNFD});
  t.normalizers.emplace_back(NormReplace{Regex("\\p{Mn}", false, field), ""});
  t.normalizers.emplace_back(NormLowercase{});
  t.normalizers.emplace_back(NormReplace{Regex("(?![\\t\\n\\v\\f\\r\\x{85}])[\\p{Cc}\\x{FFFD}]", false, field), ""});
  t.pre_tokenizers.emplace_back(PreSplit{Regex("\\s+", false, field), SplitBehavior::kRemoved, false});
  t.pre_tokenizers.emplace_back(PreSplit{
      Regex("[\\p{P}$+<=>^`|~\\x{3400}-\\x{4DBF}\\x{4E00}-\\x{9FFF}\\x{F900}-\\x{FAFF}\\x{20000}-\\x{2A6DF}"
            "\\x{2A700}-\\x{2B73F}\\x{2B740}-\\x{2B81F}\\x{2B920}-\\x{2CEAF}\\x{2F800}-\\x{2FA1F}]",
            false, field),
      SplitBehavior::kIsolated, false});
  WordPieceModel wp;
  for (const auto& [text, id] : vocab) wp.max_piece_bytes = std::max(wp.max_piece_bytes, text.size());
  wp.vocab = std::move(vocab);
  wp.unk = unk;
  t.wordpiece = std::move(wp);
  t.has_decoder = true;
  t.decoders.emplace_back(DecReplace{kSpace, " "});
  t.decoders.emplace_back(DecStrip{" ", 1, 0});
}

// llama.cpp's "ugm" vocabulary (NOTE [Unigram tokenizers]): normal, user-defined and unused
// tokens are pieces; the unknown piece scores 10 below the lowest normal one; the text goes
// through SentencePiece's normaliser (charsmap, dummy prefix, extra spaces) and is segmented whole.
void build_unigram(const GgufFile& g, Tokenizer::Impl& t, const std::vector<int64_t>& types) {
  const size_t n = t.tokens.size();
  UnigramModel u;
  const std::vector<double> scores = g.contains("tokenizer.ggml.scores") ? g.get_floats("tokenizer.ggml.scores")
                                                                          : std::vector<double>(n, 0.0);
  if (scores.size() != n)
    throw Error(ErrorCode::kFormat, "GGUF file '" + g.source() + "': tokenizer.ggml.scores has " +
                                        std::to_string(scores.size()) + " entries for " + std::to_string(n) + " tokens");
  u.scores = scores;
  u.user_defined.assign(n, 0);
  double min_score = std::numeric_limits<double>::infinity();
  SentencePieceNormalizer norm;
  for (size_t id = 0; id < n; ++id) {
    const int64_t type = types[id];
    if (type == kNormal) min_score = std::min(min_score, scores[id]);
    if (type == kUserDefined) u.user_defined[id] = 1, norm.user_defined.push_back(t.tokens[id]);
    if (type == kNormal || type == kUserDefined || type == kUnused) {
      u.pieces.emplace(t.tokens[id], (int32_t)id);
      u.max_piece_bytes = std::max(u.max_piece_bytes, t.tokens[id].size());
    }
  }
  const std::optional<int32_t> unk = optional_id(g, "tokenizer.ggml.unknown_token_id", n);
  u.unk = unk.value_or(std::min<int32_t>(2, (int32_t)n - 1));  // llama.cpp's default for t5
  u.unk_score = (std::isfinite(min_score) ? min_score : 0.0) - 10.0;
  if (g.contains("tokenizer.ggml.precompiled_charsmap")) {
    std::string blob;
    for (int64_t b : g.get_ints("tokenizer.ggml.precompiled_charsmap")) blob += (char)(uint8_t)b;
    norm.charsmap = std::make_shared<PrecompiledCharsmap>(blob, "GGUF file '" + g.source() + "': tokenizer.ggml.precompiled_charsmap");
  }
  norm.add_dummy_prefix = bool_or(g, "tokenizer.ggml.add_space_prefix", false);
  norm.remove_extra_whitespaces = bool_or(g, "tokenizer.ggml.remove_extra_whitespaces", false);
  t.normalizers.emplace_back(NormSentencePiece{std::move(norm)});
  t.unigram = std::move(u);
  t.has_decoder = true;
  t.decoders.emplace_back(DecReplace{kSpace, " "});
  t.decoders.emplace_back(DecFuse{});  // then the one leading space of the whole text goes
  if (bool_or(g, "tokenizer.ggml.add_space_prefix", false)) t.decoders.emplace_back(DecStrip{" ", 1, 0});
}

// What the raw UTF-8 BPE kinds (gemma4, whitespace) share, after their own normalisers, splits
// and decoders: merges by rank, <0xXX> byte fallback, and the byte fallback and fusing decoders.
void raw_utf8_bpe(const GgufFile& g, const std::vector<int64_t>& types, Tokenizer::Impl& t) {
  t.model.order = BpeModel::Order::kRank;
  t.model.byte_fallback = true;
  byte_fallback_ids(t.tokens, types, t.model);
  read_merges(g, t.model);
  t.has_decoder = true;
  t.decoders.emplace_back(DecByteFallback{});
  t.decoders.emplace_back(DecFuse{});
}

}  // namespace

Tokenizer Tokenizer::from_gguf(const GgufFile& g) {
  std::string kind = g.get_string("tokenizer.ggml.model");
  // llama.cpp runs these "gpt2" pre-tokenizer names as its gemma4 vocabulary (raw UTF-8 BPE).
  if (kind == "gpt2" && g.contains("tokenizer.ggml.pre")) {
    const std::string pre = g.get_string("tokenizer.ggml.pre");
    if (pre == "gemma4" || pre == "granite-embed-multi-311m" || pre == "sarvam-moe") kind = "gemma4";
  }
  if (kind != "llama" && kind != "gpt2" && kind != "bert" && kind != "gemma4" && kind != "t5" && kind != "whitespace")
    throw Error(ErrorCode::kUnsupported, "GGUF file '" + g.source() + "': tokenizer.ggml.model '" + kind +
                                             "' is not implemented (supported: llama, gpt2, bert, gemma4, t5, whitespace)");
  auto t = std::make_shared<Impl>();
  t->source = g.source();
  t->tokens = g.get_strings("tokenizer.ggml.tokens");
  const size_t n = t->tokens.size();
  if (n == 0 || n > (1u << 30))
    throw Error(ErrorCode::kFormat, "GGUF file '" + g.source() + "': tokenizer.ggml.tokens has " +
                                        std::to_string(n) + " entries");
  std::vector<int64_t> types(n, kNormal);
  if (g.contains("tokenizer.ggml.token_type")) {
    types = g.get_ints("tokenizer.ggml.token_type");
    if (types.size() != n)
      throw Error(ErrorCode::kFormat, "GGUF file '" + g.source() + "': tokenizer.ggml.token_type has " +
                                          std::to_string(types.size()) + " entries for " +
                                          std::to_string(n) + " tokens");
  }
  for (size_t id = 0; id < n; ++id)
    if (find_invalid_utf8(t->tokens[id]) != kValidUtf8)
      throw Error(ErrorCode::kFormat, "GGUF file '" + g.source() + "': tokenizer.ggml.tokens[" +
                                          std::to_string(id) + "] is not valid UTF-8");
  BpeModel& model = t->model;
  const GgufPreTokenizer* pre_row = nullptr;  // gpt2 kind only
  StringIdMap wordpiece_vocab;                // bert kind only
  model.vocab.reserve(n);
  for (size_t id = 0; id < n; ++id) {
    // Control, unused and byte tokens never come out of merging (SentencePiece keeps them out of
    // its pieces); user-defined tokens are matched whole, as added tokens.
    const bool mergeable =
        kind == "gpt2" || kind == "gemma4" || kind == "whitespace" ? true : (types[id] == kNormal || types[id] == kUnknown);
    if (kind == "bert")
      wordpiece_vocab.emplace(t->tokens[id], (int32_t)id);  // every token, as llama.cpp's text_to_token
    else if (mergeable && types[id] != kUnknown)
      model.vocab.emplace(t->tokens[id], (int32_t)id);
    if (types[id] == kControl || types[id] == kUserDefined) {
      AddedToken a;
      a.id = (int32_t)id;
      a.content = t->tokens[id];
      a.special = types[id] == kControl;
      t->added.push_back(std::move(a));
    }
  }
  t->bos = optional_id(g, "tokenizer.ggml.bos_token_id", n);
  t->eos = optional_id(g, "tokenizer.ggml.eos_token_id", n);
  t->pad = optional_id(g, "tokenizer.ggml.padding_token_id", n);
  if (kind == "bert" && !t->bos) t->bos = optional_id(g, "tokenizer.ggml.cls_token_id", n);  // BERT's [CLS]
  model.unk = optional_id(g, "tokenizer.ggml.unknown_token_id", n);
  if (kind == "llama") {
    model.order = BpeModel::Order::kScore;
    model.byte_fallback = true;
    if (g.contains("tokenizer.ggml.scores")) {
      const std::vector<double> scores = g.get_floats("tokenizer.ggml.scores");
      if (scores.size() != n)
        throw Error(ErrorCode::kFormat, "GGUF file '" + g.source() + "': tokenizer.ggml.scores has " +
                                            std::to_string(scores.size()) + " entries for " +
                                            std::to_string(n) + " tokens");
      model.scores.assign(scores.begin(), scores.end());
    }
    byte_fallback_ids(t->tokens, types, model);
    const bool prefix = bool_or(g, "tokenizer.ggml.add_space_prefix", true);
    if (prefix) t->normalizers.emplace_back(NormPrepend{kSpace});
    t->normalizers.emplace_back(NormReplace{Regex(" ", true, "replace"), kSpace});
    t->has_decoder = true;
    t->decoders.emplace_back(DecReplace{kSpace, " "});
    t->decoders.emplace_back(DecByteFallback{});
    t->decoders.emplace_back(DecFuse{});
    if (prefix) t->decoders.emplace_back(DecStrip{" ", 1, 0});
  } else if (kind == "bert") {
    build_wordpiece(g, *t, std::move(wordpiece_vocab), model.unk);
  } else if (kind == "t5") {
    build_unigram(g, *t, types);
  } else if (kind == "gemma4") {
    // SentencePiece-style BPE on raw UTF-8 (llama.cpp's "gemma4" vocabulary): spaces become "▁",
    // the text is cut only at newline runs, merges by rank, byte fallback.
    t->normalizers.emplace_back(NormReplace{Regex(" ", true, "replace"), kSpace});
    t->pre_tokenizers.emplace_back(
        PreSplit{Regex("[^\\n]+|[\\n]+", false, "tokenizer.ggml.model 'gemma4'"), SplitBehavior::kIsolated, false});
    t->decoders.emplace_back(DecReplace{kSpace, " "});
    raw_utf8_bpe(g, types, *t);
  } else if (kind == "whitespace") {
    // llama.cpp's "whitespace" vocabulary, which its converter writes for JinaBERT models whose
    // tokenizer.json pre-tokenizes with Hugging Face's Whitespace (jina-embeddings-v2-base-zh): BPE
    // on raw UTF-8, merges by rank, byte fallback. The words are Whitespace's (kWhitespaceWords:
    // runs of word characters and runs of other non-space ones, whitespace dropped): the model's own split, where llama.cpp
    // cuts at whitespace only (NOTE [GGUF pre-tokenizers]).
    t->pre_tokenizers.emplace_back(
        PreSplit{Regex(kWhitespaceWords, false, "tokenizer.ggml.model 'whitespace'"), SplitBehavior::kRemoved, true});
    raw_utf8_bpe(g, types, *t);
  } else {
    model.order = BpeModel::Order::kRank;
    model.byte_level = true;
    // NOTE [GGUF pre-tokenizers]: one table row per llama.cpp name; no name is llama.cpp's default.
    const std::string pre = g.contains("tokenizer.ggml.pre") ? g.get_string("tokenizer.ggml.pre") : "default";
    pre_row = find_gguf_pre_tokenizer(pre);
    if (!pre_row)
      throw Error(ErrorCode::kUnsupported, "GGUF file '" + g.source() + "': tokenizer.ggml.pre '" + pre +
                                               "' is not implemented (supported: " + gguf_pre_tokenizer_names() +
                                               ", gemma4, granite-embed-multi-311m, sarvam-moe" +
                                               "); use the model's tokenizer.json instead");
    for (const char* re : pre_row->regexes)
      t->pre_tokenizers.emplace_back(PreSplit{Regex(re, false, "tokenizer.ggml.pre '" + pre + "'"), SplitBehavior::kIsolated, false});
    t->pre_tokenizers.emplace_back(PreByteLevel{false, std::nullopt});
    if (pre_row->nfc) t->normalizers.emplace_back(NormUnicode{UnicodeForm::kNFC});
    model.ignore_merges = pre_row->ignore_merges;
    const auto& table = byte_to_unicode();
    for (int b = 0; b < 256; ++b) {
      std::string key;
      append_utf8(key, table[b]);
      auto it = model.vocab.find(key);
      model.byte_ids[b] = it == model.vocab.end() ? -1 : it->second;
    }
    read_merges(g, model);
    t->has_decoder = true;
    t->decoders.emplace_back(DecByteLevel{});
  }
  const bool add_bos = bool_or(g, "tokenizer.ggml.add_bos_token", kind == "llama" || kind == "bert" || (pre_row && pre_row->add_bos));
  const bool add_eos = bool_or(g, "tokenizer.ggml.add_eos_token", false);
  PostTemplate post;
  if (add_bos && t->bos) post.single.push_back(*t->bos);
  post.single.push_back(-1);
  if (add_eos && t->eos) post.single.push_back(*t->eos);
  if (kind == "bert")  // [CLS] text [SEP], llama.cpp's add_sep
    if (auto sep = optional_id(g, "tokenizer.ggml.seperator_token_id", n); sep && bool_or(g, "tokenizer.ggml.add_sep_token", true))
      post.single.push_back(*sep);
  t->post = std::move(post);
  t->finish();
  return Tokenizer(std::move(t));
}

}  // namespace spore::nlp
