// The vocabulary as bytes, in a trie (NOTE [Grammars]). A token's bytes are what it adds to the
// decoded text: byte-level BPE tokens map back through GPT-2's table, SentencePiece-style tokens
// turn U+2581 into a space and <0xHH> into the byte, added (non-special) tokens are their text.
// The tokenizer's internals are read here, not changed.
#include <algorithm>

#include "nlp/grammar/matcher.h"
#include "nlp/tokenizer/pipeline.h"
#include "nlp/tokenizer/utf8.h"
#include "spore/error.h"

namespace spore::nlp::detail {

namespace {

// UTF-8 code points of `s` (the vocabulary's strings are valid UTF-8).
std::vector<uint32_t> code_points(std::string_view s) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = (unsigned char)s[i];
    const int n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4;
    uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k < n && i + (size_t)k < s.size(); ++k) cp = (cp << 6) | ((unsigned char)s[i + (size_t)k] & 0x3F);
    out.push_back(cp);
    i += (size_t)n;
  }
  return out;
}

}  // namespace

std::vector<std::optional<std::string>> token_bytes(const Tokenizer& tokenizer) {
  const Tokenizer::Impl& t = tokenizer.impl();
  std::vector<std::optional<std::string>> out(t.tokens.size());
  std::vector<uint8_t> added(t.tokens.size(), 0);
  for (const AddedToken& a : t.added)
    if (a.id >= 0 && (size_t)a.id < added.size()) added[(size_t)a.id] = 1;
  for (size_t id = 0; id < t.tokens.size(); ++id) {
    if (id < t.special.size() && t.special[id]) continue;
    const std::string& tok = t.tokens[id];
    if (tok.empty()) continue;
    if (added[id]) {
      out[id] = tok;
      continue;
    }
    std::string bytes;
    if (t.model.byte_level) {
      bool ok = true;
      for (uint32_t cp : code_points(tok)) {
        const int b = unicode_to_byte(cp);
        if (b < 0) {
          ok = false;
          break;
        }
        bytes.push_back((char)b);
      }
      if (!ok) bytes = tok;
    } else if (t.model.byte_fallback && byte_token_value(tok) >= 0) {
      bytes.push_back((char)byte_token_value(tok));
    } else {
      // SentencePiece's meta space (U+2581) is a space in the text.
      for (size_t i = 0; i < tok.size();) {
        if (tok.compare(i, 3, "\xE2\x96\x81") == 0) {
          bytes.push_back(' ');
          i += 3;
        } else {
          bytes.push_back(tok[i++]);
        }
      }
    }
    out[id] = std::move(bytes);
  }
  return out;
}

TokenTrie::TokenTrie(const std::vector<std::optional<std::string>>& bytes, int64_t vocab) : bytes_(bytes), vocab_(vocab) {
  if ((int64_t)bytes_.size() > vocab_) bytes_.resize((size_t)vocab_);
  // Sorted byte strings list the trie's nodes in pre-order: each string adds the nodes past its
  // common prefix with the one before (std::string compares bytes as unsigned char, the order of
  // a trie whose children go by byte).
  std::vector<int32_t> ids;
  for (size_t id = 0; id < bytes_.size(); ++id)
    if (bytes_[id] && !bytes_[id]->empty()) ids.push_back((int32_t)id);
  std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return *bytes_[(size_t)a] < *bytes_[(size_t)b]; });
  std::vector<uint32_t> open;  // the current path's nodes, by depth - 1, not yet given their skip
  const std::string* prev = nullptr;
  for (int32_t id : ids) {
    const std::string& s = *bytes_[(size_t)id];
    size_t common = 0;
    if (prev)
      while (common < prev->size() && common < s.size() && (*prev)[common] == s[common]) ++common;
    while (open.size() > common) {  // the previous path below the common prefix is complete
      skip_[open.back()] = (uint32_t)byte_.size();
      open.pop_back();
    }
    for (size_t d = common; d < s.size(); ++d) {
      open.push_back((uint32_t)byte_.size());
      byte_.push_back((uint8_t)s[d]);
      depth_.push_back((uint32_t)d + 1);
      skip_.push_back(0);
      token_begin_.push_back((uint32_t)token_ids_.size());
    }
    max_depth_ = std::max(max_depth_, (uint32_t)s.size());
    token_ids_.push_back(id);  // the last node made: the equal strings before it made no others
    prev = &s;
  }
  for (uint32_t n : open) skip_[n] = (uint32_t)byte_.size();
  token_begin_.push_back((uint32_t)token_ids_.size());
}

const std::string* TokenTrie::bytes_of(int32_t id) const {
  if (id < 0 || (size_t)id >= bytes_.size() || !bytes_[(size_t)id]) return nullptr;
  return &*bytes_[(size_t)id];
}

}  // namespace spore::nlp::detail
