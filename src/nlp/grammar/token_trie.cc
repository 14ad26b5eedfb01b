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
    } else if (tok.size() == 6 && tok[0] == '<' && tok[1] == '0' && tok[2] == 'x' && tok[5] == '>' && t.model.byte_fallback) {
      bytes.push_back((char)std::stoi(tok.substr(3, 2), nullptr, 16));
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
  nodes_.emplace_back();
  for (size_t id = 0; id < bytes_.size(); ++id) {
    if (!bytes_[id] || bytes_[id]->empty()) continue;
    int32_t n = 0;
    for (char c : *bytes_[id]) {
      auto& kids = nodes_[(size_t)n].kids;
      auto it = std::lower_bound(kids.begin(), kids.end(), (uint8_t)c,
                                 [](const std::pair<uint8_t, int32_t>& k, uint8_t b) { return k.first < b; });
      if (it != kids.end() && it->first == (uint8_t)c) {
        n = it->second;
      } else {
        const int32_t child = (int32_t)nodes_.size();
        kids.insert(it, {(uint8_t)c, child});
        nodes_.emplace_back();
        n = child;
      }
    }
    nodes_[(size_t)n].tokens.push_back((int32_t)id);
  }
}

const std::string* TokenTrie::bytes_of(int32_t id) const {
  if (id < 0 || (size_t)id >= bytes_.size() || !bytes_[(size_t)id]) return nullptr;
  return &*bytes_[(size_t)id];
}

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie,
                               std::vector<int32_t> end_ids)
    : grammar_(std::move(grammar)), trie_(std::move(trie)), end_ids_(std::move(end_ids)),
      state_(GrammarState::start(grammar_->impl())) {}

int32_t GrammarMatcher::step(Walk& w, int32_t state, uint8_t byte) const {
  const size_t k = (size_t)state * 256 + byte;
  if (w.next[k] != -3) return w.next[k];
  if (w.states.size() >= grammar_->impl().limits.max_walk_states) return -2;
  GrammarState n = w.states[(size_t)state];
  int32_t id = -1;
  if (n.feed(grammar_->impl(), byte)) {
    std::string key = n.key();
    auto [it, fresh] = w.ids.emplace(std::move(key), (int32_t)w.states.size());
    if (fresh) {
      w.states.push_back(std::move(n));
      w.next.resize(w.states.size() * 256, -3);
    }
    id = it->second;
  }
  w.next[k] = id;
  return id;
}

void GrammarMatcher::walk(Walk& w, int32_t node, int32_t state, std::vector<uint64_t>& mask) const {
  for (const auto& [byte, child] : trie_->nodes()[(size_t)node].kids) {
    const int32_t next = step(w, state, byte);
    if (next == -2) {  // the tables are full: this subtree without them
      GrammarState n = w.states[(size_t)state];
      if (!n.feed(grammar_->impl(), byte)) continue;
      for (int32_t id : trie_->nodes()[(size_t)child].tokens) mask[(size_t)id >> 6] |= uint64_t{1} << (id & 63);
      walk_plain(child, n, mask);
      continue;
    }
    if (next < 0) continue;  // no token below this node can match: prune
    for (int32_t id : trie_->nodes()[(size_t)child].tokens) mask[(size_t)id >> 6] |= uint64_t{1} << (id & 63);
    walk(w, child, next, mask);
  }
}

void GrammarMatcher::walk_plain(int32_t node, const GrammarState& state, std::vector<uint64_t>& mask) const {
  for (const auto& [byte, child] : trie_->nodes()[(size_t)node].kids) {
    GrammarState n = state;
    if (!n.feed(grammar_->impl(), byte)) continue;
    for (int32_t id : trie_->nodes()[(size_t)child].tokens) mask[(size_t)id >> 6] |= uint64_t{1} << (id & 63);
    walk_plain(child, n, mask);
  }
}

const std::vector<uint64_t>& GrammarMatcher::allowed() {
  if (current_) return *current_;
  const std::string key = state_.key();
  if (auto it = cache_.find(key); it != cache_.end()) {
    current_ = it->second;
    return *current_;
  }
  auto mask = std::make_shared<std::vector<uint64_t>>(((size_t)trie_->vocab() + 63) / 64, 0);
  Walk w;
  w.states.push_back(state_);
  w.ids.emplace(key, 0);
  w.next.assign(256, -3);
  walk(w, 0, 0, *mask);
  if (state_.accepting())
    for (int32_t id : end_ids_)
      if (id >= 0 && id < trie_->vocab()) (*mask)[(size_t)id >> 6] |= uint64_t{1} << (id & 63);
  if (cache_.size() >= 1024) cache_.clear();  // a bound on memory: ~19 kB a mask at 150k tokens
  cache_.emplace(key, mask);
  current_ = mask;
  return *current_;
}

void GrammarMatcher::accept(int32_t token) {
  if (std::find(end_ids_.begin(), end_ids_.end(), token) != end_ids_.end() && state_.accepting()) return;
  const std::string* bytes = trie_->bytes_of(token);
  GrammarState next = state_;
  if (!bytes || !next.feed(grammar_->impl(), *bytes))
    throw Error(ErrorCode::kValue, "grammar: token " + std::to_string(token) + " does not continue the grammar here");
  state_ = std::move(next);
  current_.reset();
}

}  // namespace spore::nlp::detail
