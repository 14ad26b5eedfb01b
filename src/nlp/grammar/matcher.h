// Matching text against a grammar, and the per-step token mask (NOTE [Grammars]).
// A GrammarState is the set of parse stacks alive after the text so far (llama.cpp's model: each
// stack's top is the character symbol the next code point must match; an empty stack means the
// text is a complete sentence), plus a UTF-8 sequence cut by a token boundary. The TokenTrie holds
// the vocabulary's bytes; GrammarMatcher walks it against its state, pruning a subtree as soon as
// no stack survives, and caches the mask per state, so the cost of a state seen before is a copy.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "nlp/grammar/grammar_impl.h"
#include "spore/nlp/tokenizer.h"

namespace spore::nlp::detail {

using ParseStack = std::vector<int32_t>;  // symbol positions; back() is the next to match

// One byte of UTF-8 decoding, shared by the matcher and the mask walk so that both take the same
// bytes: a whole code point, a valid prefix (the code points it may still become: [lo, hi]), or
// invalid (a stray continuation byte, an overlong form, a surrogate, past U+10FFFF).
struct Utf8Step {
  enum Kind : uint8_t { kInvalid, kCodePoint, kPrefix } kind = kInvalid;
  uint32_t cp = 0, lo = 0, hi = 0;
};
// `partial`, `left`, `min`: the sequence's bits so far, continuation bytes still to come, and the
// smallest code point its length may encode; updated in place.
Utf8Step utf8_step(uint32_t& partial, uint8_t& left, uint32_t& min, uint8_t byte);

struct GrammarState {
  std::vector<ParseStack> stacks;  // sorted, distinct
  uint32_t partial = 0;            // the code point's bits read so far
  uint8_t partial_left = 0;        // continuation bytes still to come
  uint32_t partial_min = 0;        // the smallest code point its length may encode (no overlongs)

  static GrammarState start(const Grammar::Impl& g);
  // Consumes one byte; false (and the state unusable) when no stack can take it.
  bool feed(const Grammar::Impl& g, uint8_t byte);
  bool feed(const Grammar::Impl& g, std::string_view bytes);
  // Consumes a whole code point (no partial sequence pending); false when no stack takes it.
  bool advance(const Grammar::Impl& g, uint32_t cp);
  bool accepting() const;  // the text so far is a sentence of the grammar
  bool finished() const;   // ... and nothing can follow it
  std::string key() const;  // identifies the state (the mask cache's key)
};

// The bytes each token stands for; nullopt for special tokens (they never match a grammar).
std::vector<std::optional<std::string>> token_bytes(const Tokenizer& tokenizer);

// The vocabulary's bytes as a trie stored flat, its nodes in depth-first pre-order: a node's
// subtree is the run of nodes up to skip(), and a node's parent is the last node before it one
// level up. A mask walk is then a forward scan that jumps over a subtree the grammar refuses,
// with no pointer chasing (NOTE [Grammars]).
class TokenTrie {
 public:
  // `vocab`: the model's logits row length (may exceed the tokenizer's; those ids never match).
  TokenTrie(const std::vector<std::optional<std::string>>& bytes, int64_t vocab);
  int64_t vocab() const { return vocab_; }

  size_t size() const { return byte_.size(); }  // nodes, the root not counted
  uint8_t byte(size_t node) const { return byte_[node]; }
  uint32_t depth(size_t node) const { return depth_[node]; }  // 1 for the root's children
  uint32_t skip(size_t node) const { return skip_[node]; }    // the first node after its subtree
  uint32_t max_depth() const { return max_depth_; }
  // The tokens whose bytes end at `node`.
  std::span<const int32_t> tokens(size_t node) const {
    return {token_ids_.data() + token_begin_[node], token_begin_[node + 1] - token_begin_[node]};
  }
  const std::string* bytes_of(int32_t id) const;

 private:
  std::vector<uint8_t> byte_;
  std::vector<uint32_t> depth_, skip_, token_begin_;
  std::vector<int32_t> token_ids_;
  uint32_t max_depth_ = 0;
  std::vector<std::optional<std::string>> bytes_;
  int64_t vocab_;
};

class GrammarMatcher {
 public:
  // `end_ids`: the tokens that may end the text once it is a sentence (the sequence's EOS ids).
  GrammarMatcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie,
                 std::vector<int32_t> end_ids);

  // The tokens allowed next, one bit per id (vocab bits), cached per state.
  const std::vector<uint64_t>& allowed();
  static bool test(const std::vector<uint64_t>& mask, int32_t id) {
    return (mask[(size_t)id >> 6] >> (id & 63)) & 1;
  }
  // Whether `token` may come next, without computing the mask (a copy of the state fed its bytes):
  // what the sampler's unmasked draw is checked with. Equals test(allowed(), token).
  bool allows(int32_t token) const;
  // Advances over a token (an end id is not text: it only ends). kValue for a token the grammar
  // does not allow here (the caller masked with allowed(), so this is a broken invariant).
  void accept(int32_t token);
  bool accepting() const { return state_.accepting(); }
  bool finished() const { return state_.finished(); }
  size_t cached_masks() const { return cache_.size(); }

 private:
  // The mask of state_ by one scan of the trie (mask_walk.cc); false when the walk's state tables
  // reached GrammarLimits::max_walk_states (the mask is then incomplete).
  bool walk(std::vector<uint64_t>& mask) const;
  // The same mask without tables: a copy of the parse state per trie level (the bounded fallback).
  void walk_plain(std::vector<uint64_t>& mask) const;

  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const TokenTrie> trie_;
  std::vector<int32_t> end_ids_;
  GrammarState state_;
  std::unordered_map<std::string, std::shared_ptr<const std::vector<uint64_t>>> cache_;
  std::shared_ptr<const std::vector<uint64_t>> current_;
};

}  // namespace spore::nlp::detail
