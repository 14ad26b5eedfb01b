// Tokenizer::from_json / from_file: a Hugging Face tokenizer.json into a pipeline.
#include <algorithm>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>

#include "nlp/tokenizer/json_fields.h"
#include "nlp/tokenizer/pipeline.h"
#include "nlp/tokenizer/utf8.h"
#include "spore/format.h"
#include "spore/gguf.h"

namespace spore::nlp {

using namespace detail;

namespace {

// Ids index dense tables (one string per id), so an id may not exceed the number of entries the
// file has (vocabulary plus added tokens): a hostile id of 2^30 would otherwise allocate 32 GB.
// kMaxId bounds ids found elsewhere (post-processor), which are then checked against the table.
constexpr int64_t kMaxId = (1 << 30);

const char kGpt2Pattern[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

// CJK ideographs as BERT's is_chinese_char lists them (handle_chinese_chars).
const char kBertCjk[] =
    "[\\x{4E00}-\\x{9FFF}\\x{3400}-\\x{4DBF}\\x{20000}-\\x{2A6DF}\\x{2A700}-\\x{2B73F}\\x{2B740}-\\x{2B81F}"
    "\\x{2B920}-\\x{2CEAF}\\x{F900}-\\x{FAFF}\\x{2F800}-\\x{2FA1F}]";

[[noreturn]] void unsupported(const std::string& source, const std::string& field,
                              const std::string& type, const char* known) {
  throw Error(ErrorCode::kUnsupported, source + ": " + field + " type '" + type +
                                           "' is not implemented (supported: " + known + ")");
}

Regex pattern_of(const Fields& f, const Json& j, const std::string& field) {
  const Json& p = f.require(j, "pattern", field);
  if (const Json* s = member(p, "String")) return Regex(f.string_at(*s, field + ".pattern.String"), true, field + ".pattern.String");
  if (const Json* r = member(p, "Regex")) return Regex(f.string_at(*r, field + ".pattern.Regex"), false, field + ".pattern.Regex");
  bad_field(f.source, field + ".pattern", "must be {\"String\": ...} or {\"Regex\": ...}");
}

void read_normalizer(const Fields& f, const Json& j, const std::string& field,
                     std::vector<NormStep>& out) {
  const std::string type = f.string(j, "type", field);
  if (type == "Sequence") {
    const Json& list = f.array(j, "normalizers", field);
    for (size_t k = 0; k < list.size(); ++k)
      read_normalizer(f, list[k], field + ".normalizers[" + std::to_string(k) + "]", out);
  } else if (type == "NFC") {
    out.emplace_back(NormUnicode{UnicodeForm::kNFC});
  } else if (type == "NFKC") {
    out.emplace_back(NormUnicode{UnicodeForm::kNFKC});
  } else if (type == "NFD") {
    out.emplace_back(NormUnicode{UnicodeForm::kNFD});
  } else if (type == "NFKD") {
    out.emplace_back(NormUnicode{UnicodeForm::kNFKD});
  } else if (type == "Prepend") {
    out.emplace_back(NormPrepend{f.string(j, "prepend", field)});
  } else if (type == "Replace") {
    out.emplace_back(NormReplace{pattern_of(f, j, field), f.string(j, "content", field)});
  } else if (type == "Lowercase") {
    out.emplace_back(NormLowercase{});
  } else if (type == "Strip") {
    out.emplace_back(NormStrip{f.boolean_or(j, "strip_left", field, true),
                               f.boolean_or(j, "strip_right", field, true)});
  } else if (type == "Precompiled") {
    // SentencePiece's charsmap, base64 (NOTE [Unigram tokenizers]); empty or null: no mapping.
    const Json* c = member(j, "precompiled_charsmap");
    const std::string text = c && !c->is_null() ? f.string_at(*c, field + ".precompiled_charsmap") : "";
    if (text.empty()) return;
    const std::optional<std::string> blob = base64_decode(text);
    if (!blob) bad_field(f.source, field + ".precompiled_charsmap", "is not base64");
    out.emplace_back(NormPrecompiled{std::make_shared<PrecompiledCharsmap>(*blob, "'" + f.source + "': " + field)});
  } else if (type == "BertNormalizer") {
    // tokenizers' normalizers/bert.rs, in its order: clean_text (drop NUL, U+FFFD and every
    // "other" character but \t \n \r; whitespace becomes a space), CJK ideographs padded with
    // spaces, accents stripped (NFD, marks dropped; by default when lowercasing), lowercase.
    const bool lower = f.boolean_or(j, "lowercase", field, true);
    if (f.boolean_or(j, "clean_text", field, true)) {
      out.emplace_back(NormReplace{Regex("[\\x{FFFD}]|(?![\\t\\n\\r])\\p{C}", false, field), ""});
      out.emplace_back(NormReplace{Regex("[\\t\\n\\r\\p{Z}]", false, field), " "});
    }
    if (f.boolean_or(j, "handle_chinese_chars", field, true)) out.emplace_back(NormPad{Regex(kBertCjk, false, field)});
    const Json* sa = member(j, "strip_accents");
    if (sa && !sa->is_null() ? f.boolean_or(j, "strip_accents", field, lower) : lower) {
      out.emplace_back(NormUnicode{UnicodeForm::kNFD});
      out.emplace_back(NormReplace{Regex("\\p{Mn}", false, field), ""});
    }
    if (lower) out.emplace_back(NormLowercase{});
  } else {
    unsupported(f.source, field, type,
                "NFC, NFKC, NFD, NFKD, Prepend, Replace, Lowercase, Strip, Precompiled, BertNormalizer, Sequence");
  }
}

PrependScheme prepend_scheme(const Fields& f, const Json& j, const std::string& field) {
  if (const Json* s = member(j, "prepend_scheme")) {
    const std::string v = f.string_at(*s, field + ".prepend_scheme");
    if (v == "always") return PrependScheme::kAlways;
    if (v == "first") return PrependScheme::kFirst;
    if (v == "never") return PrependScheme::kNever;
    bad_field(f.source, field + ".prepend_scheme", "is '" + v + "', not always, first or never");
  }
  return f.boolean_or(j, "add_prefix_space", field, true) ? PrependScheme::kAlways
                                                          : PrependScheme::kNever;
}

void read_pre_tokenizer(const Fields& f, const Json& j, const std::string& field,
                        std::vector<PreStep>& out, bool& byte_level) {
  const std::string type = f.string(j, "type", field);
  if (type == "Sequence") {
    const Json& list = f.array(j, "pretokenizers", field);
    for (size_t k = 0; k < list.size(); ++k)
      read_pre_tokenizer(f, list[k], field + ".pretokenizers[" + std::to_string(k) + "]", out,
                         byte_level);
  } else if (type == "Split") {
    const std::string b = f.string(j, "behavior", field);
    SplitBehavior behavior;
    if (b == "Isolated") behavior = SplitBehavior::kIsolated;
    else if (b == "Removed") behavior = SplitBehavior::kRemoved;
    else if (b == "MergedWithPrevious") behavior = SplitBehavior::kMergedWithPrevious;
    else if (b == "MergedWithNext") behavior = SplitBehavior::kMergedWithNext;
    else if (b == "Contiguous") behavior = SplitBehavior::kContiguous;
    else bad_field(f.source, field + ".behavior", "is '" + b + "', not a split behaviour");
    out.emplace_back(PreSplit{pattern_of(f, j, field), behavior, f.boolean_or(j, "invert", field, false)});
  } else if (type == "ByteLevel") {
    std::optional<Regex> re;
    if (f.boolean_or(j, "use_regex", field, true)) re.emplace(kGpt2Pattern, false, field);
    out.emplace_back(PreByteLevel{f.boolean_or(j, "add_prefix_space", field, true), std::move(re)});
    byte_level = true;
  } else if (type == "Metaspace") {
    out.emplace_back(PreMetaspace{f.string_or(j, "replacement", field, "\xE2\x96\x81"),
                                  prepend_scheme(f, j, field), f.boolean_or(j, "split", field, true)});
  } else if (type == "Digits") {
    out.emplace_back(PreDigits{f.boolean_or(j, "individual_digits", field, false)});
  } else if (type == "Whitespace") {
    out.emplace_back(PreSplit{Regex(kWhitespaceWords, false, field), SplitBehavior::kRemoved, true});
  } else if (type == "WhitespaceSplit") {
    out.emplace_back(PreSplit{Regex("\\s+", false, field), SplitBehavior::kRemoved, false});
  } else if (type == "BertPreTokenizer") {
    // Words at whitespace (dropped), then every punctuation mark (Unicode P or ASCII
    // punctuation) a word of its own (tokenizers' pre_tokenizers/bert.rs).
    out.emplace_back(PreSplit{Regex("\\s+", false, field), SplitBehavior::kRemoved, false});
    out.emplace_back(PreSplit{Regex("[\\p{P}$+<=>^`|~]", false, field), SplitBehavior::kIsolated, false});
  } else {
    unsupported(f.source, field, type, "Split, ByteLevel, Metaspace, Digits, Whitespace, WhitespaceSplit, BertPreTokenizer, Sequence");
  }
}

void read_decoder(const Fields& f, const Json& j, const std::string& field,
                  std::vector<DecStep>& out) {
  const std::string type = f.string(j, "type", field);
  if (type == "Sequence") {
    const Json& list = f.array(j, "decoders", field);
    for (size_t k = 0; k < list.size(); ++k)
      read_decoder(f, list[k], field + ".decoders[" + std::to_string(k) + "]", out);
  } else if (type == "ByteLevel") {
    out.emplace_back(DecByteLevel{});
  } else if (type == "ByteFallback") {
    out.emplace_back(DecByteFallback{});
  } else if (type == "Fuse") {
    out.emplace_back(DecFuse{});
  } else if (type == "Strip") {
    out.emplace_back(DecStrip{f.string(j, "content", field),
                              (size_t)f.integer_or(j, "start", field, 0, 0, 1 << 20),
                              (size_t)f.integer_or(j, "stop", field, 0, 0, 1 << 20)});
  } else if (type == "Replace") {
    const Json& p = f.require(j, "pattern", field);
    const Json* s = member(p, "String");
    if (!s) unsupported(f.source, field + ".pattern", "Regex", "String");
    out.emplace_back(DecReplace{f.string_at(*s, field + ".pattern.String"), f.string(j, "content", field)});
  } else if (type == "Metaspace") {
    out.emplace_back(DecMetaspace{f.string_or(j, "replacement", field, "\xE2\x96\x81"),
                                  prepend_scheme(f, j, field) != PrependScheme::kNever});
  } else if (type == "WordPiece") {
    out.emplace_back(DecWordPiece{f.string_or(j, "prefix", field, "##"), f.boolean_or(j, "cleanup", field, true)});
  } else {
    unsupported(f.source, field, type, "ByteLevel, ByteFallback, Fuse, Strip, Replace, Metaspace, WordPiece, Sequence");
  }
}

void read_post_processor(const Fields& f, const Json& j, const std::string& field,
                         const Tokenizer::Impl& t, std::optional<PostTemplate>& post) {
  const std::string type = f.string(j, "type", field);
  auto special_id = [&](const Json& pair, const std::string& name) {
    if (!pair.is_array() || pair.size() != 2) bad_field(f.source, name, "must be [token, id]");
    return (int32_t)f.integer_at(pair[1], name + "[1]", 0, kMaxId);
  };
  if (type == "Sequence") {
    const Json& list = f.array(j, "processors", field);
    for (size_t k = 0; k < list.size(); ++k)
      read_post_processor(f, list[k], field + ".processors[" + std::to_string(k) + "]", t, post);
  } else if (type == "ByteLevel") {
    if (!post) post = PostTemplate{{-1}};  // offsets only: the ids are unchanged
  } else if (type == "TemplateProcessing") {
    const Json& single = f.array(j, "single", field);
    const Json* specials = member(j, "special_tokens");
    PostTemplate tpl;
    for (size_t k = 0; k < single.size(); ++k) {
      const std::string item = field + ".single[" + std::to_string(k) + "]";
      if (member(single[k], "Sequence")) {
        tpl.single.push_back(-1);
      } else if (const Json* st = member(single[k], "SpecialToken")) {
        const std::string name = f.string(*st, "id", item + ".SpecialToken");
        const Json* entry = specials ? member(*specials, name.c_str()) : nullptr;
        if (!entry) bad_field(f.source, field + ".special_tokens." + name, "is missing (used by " + item + ")");
        const Json& ids = f.array(*entry, "ids", field + ".special_tokens." + name);
        for (size_t m = 0; m < ids.size(); ++m)
          tpl.single.push_back((int32_t)f.integer_at(ids[m], field + ".special_tokens." + name + ".ids[" + std::to_string(m) + "]", 0, kMaxId));
      } else {
        bad_field(f.source, item, "must be {\"Sequence\": ...} or {\"SpecialToken\": ...}");
      }
    }
    post = std::move(tpl);
  } else if (type == "RobertaProcessing" || type == "BertProcessing") {
    post = PostTemplate{{special_id(f.require(j, "cls", field), field + ".cls"), -1,
                         special_id(f.require(j, "sep", field), field + ".sep")}};
  } else {
    unsupported(f.source, field, type, "TemplateProcessing, ByteLevel, RobertaProcessing, BertProcessing, Sequence");
  }
}

// model.vocab and model.merges hold nearly all of a tokenizer.json (151 k entries each for
// Qwen3). Building nlohmann's DOM for them costs a node per entry and most of the load time, so a
// SAX pass streams exactly those two members into flat vectors and builds the DOM for everything
// else (where they appear as an empty object and an empty array).
struct MergeEntry {
  std::string a, b;  // b empty and joined true: the "a b" string form, in a
  bool joined = false;
};
struct StreamedModel {
  bool vocab_seen = false, merges_seen = false;
  std::vector<std::pair<std::string, Json>> vocab;  // values checked later, with field names
  std::vector<MergeEntry> merges;
  std::string error;
};

class TokenizerSax {
 public:
  TokenizerSax(Json& root, StreamedModel& m) : dom_(root, true), m_(m) {}

  bool null() { return mode_ ? value(Json()) : dom_.null(); }
  bool boolean(bool v) { return mode_ ? value(Json(v)) : dom_.boolean(v); }
  bool number_integer(Json::number_integer_t v) { return mode_ ? value(Json(v)) : dom_.number_integer(v); }
  bool number_unsigned(Json::number_unsigned_t v) { return mode_ ? value(Json(v)) : dom_.number_unsigned(v); }
  bool number_float(Json::number_float_t v, const std::string& s) { return mode_ ? value(Json(v)) : dom_.number_float(v, s); }
  bool binary(Json::binary_t& v) { return mode_ ? fail("holds binary data") : dom_.binary(v); }
  bool string(std::string& v) {
    if (mode_ == kVocab) return value(Json(std::move(v)));
    if (mode_ == kMerges) {
      if (in_pair_) {
        if (pair_n_ >= 2) return fail("has more than two tokens");
        (pair_n_++ == 0 ? pair_.a : pair_.b) = std::move(v);
      } else {
        m_.merges.push_back(MergeEntry{std::move(v), {}, true});
      }
      return true;
    }
    return dom_.string(v);
  }
  bool start_object(std::size_t n) {
    if (mode_) return fail("must not hold an object");
    ++depth_;
    if (depth_ == 3 && key1_ == "model" && key2_ == "vocab") {
      mode_ = kVocab;
      m_.vocab_seen = true;
    }
    return dom_.start_object(n);
  }
  bool key(std::string& k) {
    if (mode_ == kVocab) {
      pending_ = std::move(k);
      return true;
    }
    if (depth_ == 1) key1_ = k;
    if (depth_ == 2) key2_ = k;
    return dom_.key(k);
  }
  bool end_object() {
    if (mode_ == kVocab) mode_ = kNone;
    --depth_;
    return dom_.end_object();
  }
  bool start_array(std::size_t n) {
    if (mode_ == kVocab) return fail("must be an integer, not an array");
    if (mode_ == kMerges) {
      if (in_pair_) return fail("nests arrays");
      in_pair_ = true;
      pair_n_ = 0;
      pair_ = MergeEntry{};
      return true;
    }
    ++depth_;
    if (depth_ == 3 && key1_ == "model" && key2_ == "merges") {
      mode_ = kMerges;
      m_.merges_seen = true;
    }
    return dom_.start_array(n);
  }
  bool end_array() {
    if (mode_ == kMerges && in_pair_) {
      if (pair_n_ != 2) return fail("must hold two tokens");
      in_pair_ = false;
      m_.merges.push_back(std::move(pair_));
      return true;
    }
    if (mode_ == kMerges) mode_ = kNone;
    --depth_;
    return dom_.end_array();
  }
  template <class E>
  bool parse_error(std::size_t pos, const std::string& token, const E& e) {
    return dom_.parse_error(pos, token, e);
  }

 private:
  bool value(Json v) {
    if (mode_ == kVocab) {
      m_.vocab.emplace_back(std::move(pending_), std::move(v));
      return true;
    }
    return fail("must be \"a b\" or [\"a\", \"b\"]");
  }
  bool fail(const std::string& what) {
    m_.error = mode_ == kVocab ? "field 'model.vocab." + pending_ + "' " + what
                               : "field 'model.merges[" + std::to_string(m_.merges.size()) + "]' " + what;
    return false;
  }
  enum Mode { kNone, kVocab, kMerges };
  nlohmann::detail::json_sax_dom_parser<Json> dom_;
  StreamedModel& m_;
  Mode mode_ = kNone;
  int depth_ = 0;
  std::string key1_, key2_, pending_;
  bool in_pair_ = false;
  int pair_n_ = 0;
  MergeEntry pair_;
};

// Hugging Face's Unigram model: vocab [[piece, score], ...] by id, unk_id (NOTE [Unigram
// tokenizers]); the unknown piece scores 10 below the lowest score, as Hugging Face's does.
void read_unigram(const Fields& f, const Json& m, Tokenizer::Impl& t) {
  if (f.boolean_or(m, "byte_fallback", "model", false))
    unsupported(f.source, "model.byte_fallback", "true", "false (Unigram with byte fallback is not implemented)");
  const Json& vocab = f.array(m, "vocab", "model");
  UnigramModel u;
  double min_score = std::numeric_limits<double>::infinity();
  for (size_t id = 0; id < vocab.size(); ++id) {
    const std::string field = "model.vocab[" + std::to_string(id) + "]";
    const Json& e = vocab[id];
    if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number())
      bad_field(f.source, field, "must be [piece, score]");
    const std::string piece = e[0].get<std::string>();
    if (find_invalid_utf8(piece) != kValidUtf8) bad_field(f.source, field, "is not valid UTF-8");
    const double score = e[1].get<double>();
    u.pieces.emplace(piece, (int32_t)id);
    u.scores.push_back(score);
    u.max_piece_bytes = std::max(u.max_piece_bytes, piece.size());
    min_score = std::min(min_score, score);
    if (id >= t.tokens.size()) t.tokens.resize(id + 1);
    t.tokens[id] = piece;
  }
  if (vocab.empty()) bad_field(f.source, "model.vocab", "is empty");
  u.user_defined.assign(vocab.size(), 0);
  const Json* unk = member(m, "unk_id");
  u.unk = unk && !unk->is_null() ? (int32_t)f.integer_at(*unk, "model.unk_id", 0, (int64_t)vocab.size() - 1) : 0;
  u.unk_score = min_score - 10.0;
  t.unigram = std::move(u);
}

// BERT's WordPiece (vocab, unk_token, continuing_subword_prefix, max_input_chars_per_word).
void read_wordpiece(const Fields& f, const Json& m, const StreamedModel& sm, Tokenizer::Impl& t, int64_t max_id) {
  f.object(m, "vocab", "model");  // present and an object (its entries were streamed)
  WordPieceModel wp;
  wp.hf = true;
  wp.vocab.reserve(sm.vocab.size());
  for (const auto& [token, value] : sm.vocab) {
    const int32_t id = (int32_t)f.integer_at(value, "model.vocab." + token, 0, max_id);
    wp.vocab.emplace(token, id);
    wp.max_piece_bytes = std::max(wp.max_piece_bytes, token.size());
    if ((size_t)id >= t.tokens.size()) t.tokens.resize(id + 1);
    t.tokens[id] = token;
  }
  wp.continuing_prefix = f.string_or(m, "continuing_subword_prefix", "model", "##");
  wp.max_word_chars = (size_t)f.integer_or(m, "max_input_chars_per_word", "model", 100, 1, 1 << 20);
  const std::string name = f.string_or(m, "unk_token", "model", "[UNK]");
  if (auto it = wp.vocab.find(name); it != wp.vocab.end()) wp.unk = it->second;
  t.wordpiece = std::move(wp);
}

void read_model(const Fields& f, const Json& m, const StreamedModel& sm, Tokenizer::Impl& t,
                bool byte_level, int64_t max_id) {
  BpeModel& model = t.model;
  std::string type;
  if (member(m, "type"))
    type = f.string(m, "type", "model");
  else if (member(m, "merges"))
    type = "BPE";  // files older than the "type" field
  if (type == "Unigram") return read_unigram(f, m, t);
  if (type == "WordPiece") {
    read_wordpiece(f, m, sm, t, max_id);
    return;
  }
  if (type != "BPE") unsupported(f.source, "model", type.empty() ? "<missing>" : type, "BPE, WordPiece, Unigram");
  if (const Json* d = member(m, "dropout"))
    if (!d->is_number() || d->get<double>() != 0.0)
      unsupported(f.source, "model.dropout", d->dump(), "null (no dropout when encoding)");
  f.object(m, "vocab", "model");  // present and an object (its entries were streamed)
  model.vocab.reserve(sm.vocab.size());
  for (const auto& [token, value] : sm.vocab) {
    const int32_t id = (int32_t)f.integer_at(value, "model.vocab." + token, 0, max_id);
    model.vocab.emplace(token, id);
    if ((size_t)id >= t.tokens.size()) t.tokens.resize(id + 1);
    t.tokens[id] = token;
  }
  model.byte_level = byte_level;
  model.byte_fallback = f.boolean_or(m, "byte_fallback", "model", false);
  model.fuse_unk = f.boolean_or(m, "fuse_unk", "model", false);
  model.ignore_merges = f.boolean_or(m, "ignore_merges", "model", false);
  model.continuing_subword_prefix = f.string_or(m, "continuing_subword_prefix", "model", "");
  model.end_of_word_suffix = f.string_or(m, "end_of_word_suffix", "model", "");
  if (byte_level && (!model.continuing_subword_prefix.empty() || !model.end_of_word_suffix.empty()))
    unsupported(f.source, "model.continuing_subword_prefix", model.continuing_subword_prefix,
                "none with a byte-level pre-tokenizer");
  if (const Json* u = member(m, "unk_token")) {
    const std::string name = f.string_at(*u, "model.unk_token");
    auto it = model.vocab.find(name);
    if (it == model.vocab.end()) bad_field(f.source, "model.unk_token", "'" + name + "' is not in model.vocab");
    model.unk = it->second;
  }
  const auto& table = byte_to_unicode();
  for (int b = 0; b < 256; ++b) {
    std::string key;
    if (byte_level)
      append_utf8(key, table[b]);
    else
      key = byte_token(b);
    auto it = model.vocab.find(key);
    model.byte_ids[b] = it == model.vocab.end() ? -1 : it->second;
  }
  f.array(m, "merges", "model");  // present and an array (its entries were streamed)
  model.merges.reserve(sm.merges.size());
  std::string joined;
  for (size_t k = 0; k < sm.merges.size(); ++k) {
    const MergeEntry& e = sm.merges[k];
    std::string_view a = e.a, b = e.b;
    if (e.joined) {
      const size_t sp = e.a.find(' ', 1);
      if (sp == std::string::npos || e.a.find(' ', sp + 1) != std::string::npos)
        bad_field(f.source, "model.merges[" + std::to_string(k) + "]",
                  "is '" + e.a + "', not two tokens separated by one space");
      a = std::string_view(e.a).substr(0, sp);
      b = std::string_view(e.a).substr(sp + 1);
    }
    auto field = [k] { return "model.merges[" + std::to_string(k) + "]"; };
    auto ia = model.vocab.find(a), ib = model.vocab.find(b);
    if (ia == model.vocab.end() || ib == model.vocab.end())
      bad_field(f.source, field(), "merges '" + std::string(a) + "' + '" + std::string(b) +
                                     "', but '" + std::string(ia == model.vocab.end() ? a : b) +
                                     "' is not in model.vocab");
    // The merged token drops the continuing prefix of its right part (WordPiece-style affixes).
    joined.assign(a);
    std::string_view right = b;
    if (!model.continuing_subword_prefix.empty() && right.starts_with(model.continuing_subword_prefix))
      right.remove_prefix(model.continuing_subword_prefix.size());
    joined += right;
    auto im = model.vocab.find(joined);
    if (im == model.vocab.end())
      bad_field(f.source, field(), "merges into '" + joined + "', which is not in model.vocab");
    model.merges.insert(ia->second, ib->second, (int32_t)k, im->second);
  }
}

void read_added_tokens(const Fields& f, const Json& root, Tokenizer::Impl& t, int64_t max_id) {
  const Json* list = member(root, "added_tokens");
  if (!list) return;
  if (!list->is_array()) bad_field(f.source, "added_tokens", "must be an array");
  for (size_t k = 0; k < list->size(); ++k) {
    const std::string field = "added_tokens[" + std::to_string(k) + "]";
    const Json& j = (*list)[k];
    AddedToken a;
    a.id = (int32_t)f.integer_at(f.require(j, "id", field), field + ".id", 0, max_id);
    a.content = f.string(j, "content", field);
    if (find_invalid_utf8(a.content) != kValidUtf8) bad_field(f.source, field + ".content", "is not valid UTF-8");
    a.special = f.boolean_or(j, "special", field, false);
    a.lstrip = f.boolean_or(j, "lstrip", field, false);
    a.rstrip = f.boolean_or(j, "rstrip", field, false);
    a.single_word = f.boolean_or(j, "single_word", field, false);
    a.normalized = f.boolean_or(j, "normalized", field, !a.special);
    t.added.push_back(std::move(a));
  }
}

bool has_byte_level(const std::vector<PreStep>& steps) {
  for (const PreStep& s : steps)
    if (std::holds_alternative<PreByteLevel>(s)) return true;
  return false;
}

}  // namespace

Tokenizer Tokenizer::from_json(std::string_view json_text, std::string_view source) {
  Fields f{std::string(source)};
  Json root;
  StreamedModel streamed;
  try {
    TokenizerSax sax(root, streamed);
    if (!Json::sax_parse(json_text.begin(), json_text.end(), &sax))
      throw Error(ErrorCode::kFormat, f.source + ": " + streamed.error);
  } catch (const Json::exception& e) {
    throw Error(ErrorCode::kFormat, f.source + ": not valid JSON: " + e.what());
  }
  if (!root.is_object()) throw Error(ErrorCode::kFormat, f.source + ": the top level must be a JSON object");
  auto t = std::make_shared<Impl>();
  t->source = f.source;
  try {
    if (const Json* n = member(root, "normalizer")) read_normalizer(f, *n, "normalizer", t->normalizers);
    if (const Json* p = member(root, "pre_tokenizer")) read_pre_tokenizer(f, *p, "pre_tokenizer", t->pre_tokenizers, t->model.byte_level);
    const Json* added = member(root, "added_tokens");
    const int64_t entries = (int64_t)streamed.vocab.size() + (added && added->is_array() ? (int64_t)added->size() : 0);
    const int64_t max_id = std::max<int64_t>(0, std::min(entries - 1, kMaxId));
    read_model(f, f.object(root, "model", "tokenizer"), streamed, *t, has_byte_level(t->pre_tokenizers), max_id);
    read_added_tokens(f, root, *t, max_id);
    if (const Json* d = member(root, "decoder")) {
      t->has_decoder = true;
      read_decoder(f, *d, "decoder", t->decoders);
    }
    if (const Json* p = member(root, "post_processor")) read_post_processor(f, *p, "post_processor", *t, t->post);
  } catch (const Json::exception& e) {
    // Checked access should leave nothing for nlohmann to throw; this keeps the promise anyway.
    throw Error(ErrorCode::kFormat, f.source + ": malformed tokenizer.json: " + e.what());
  }
  t->finish();
  if (t->post)
    for (int32_t id : t->post->single)
      if (id >= (int32_t)t->tokens.size() || (id >= 0 && t->tokens[id].empty()))
        bad_field(f.source, "post_processor",
                  "uses id " + std::to_string(id) + ", which is not in the vocabulary");
  // Special tokens the post-processor adds: BOS is the first id before the sequence, EOS the
  // first after it.
  if (t->post) {
    const auto& s = t->post->single;
    auto seq = std::find(s.begin(), s.end(), -1);
    if (seq != s.begin()) t->bos = s.front();
    if (seq != s.end() && seq + 1 != s.end()) t->eos = *(seq + 1);
  }
  return Tokenizer(std::move(t));
}

Tokenizer Tokenizer::from_file(const std::filesystem::path& path) {
  std::filesystem::path file = path;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    file = path / "tokenizer.json";
    if (!std::filesystem::exists(file, ec)) {
      std::vector<std::filesystem::path> ggufs;
      for (const auto& e : std::filesystem::directory_iterator(path, ec))
        if (e.path().extension() == ".gguf") ggufs.push_back(e.path());
      if (ggufs.size() != 1)
        throw Error(ErrorCode::kIO, "tokenizer: directory '" + path.string() +
                                        "' has no tokenizer.json and " +
                                        std::to_string(ggufs.size()) +
                                        " .gguf files; pass the file itself");
      file = ggufs[0];
    }
  }
  {
    // A GGUF (weights and all) is recognised by its magic, without reading it whole.
    std::ifstream in(file, std::ios::binary);
    char magic[4] = {};
    if (in && in.read(magic, 4) && std::string_view(magic, 4) == "GGUF")
      return from_gguf(GgufFile(file));
  }
  const std::vector<uint8_t> bytes = read_file_bytes(file);
  return from_json(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                   file.string());
}

}  // namespace spore::nlp
