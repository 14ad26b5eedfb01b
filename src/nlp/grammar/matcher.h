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
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "nlp/grammar/grammar_impl.h"
#include "spore/nlp/tokenizer.h"

namespace spore::nlp::detail {

using ParseStack = std::vector<int32_t>;  // symbol positions; back() is the next to match

struct GrammarState {
  std::vector<ParseStack> stacks;  // sorted, distinct
  uint32_t partial = 0;            // the code point's bits read so far
  uint8_t partial_left = 0;        // continuation bytes still to come
  uint32_t partial_min = 0;        // the smallest code point its length may encode (no overlongs)

  static GrammarState start(const Grammar::Impl& g);
  // Consumes one byte; false (and the state unusable) when no stack can take it.
  bool feed(const Grammar::Impl& g, uint8_t byte);
  bool feed(const Grammar::Impl& g, std::string_view bytes);
  bool accepting() const;  // the text so far is a sentence of the grammar
  bool finished() const;   // ... and nothing can follow it
  std::string key() const;  // identifies the state (the mask cache's key)
};

// The bytes each token stands for; nullopt for special tokens (they never match a grammar).
std::vector<std::optional<std::string>> token_bytes(const Tokenizer& tokenizer);

class TokenTrie {
 public:
  // `vocab`: the model's logits row length (may exceed the tokenizer's; those ids never match).
  TokenTrie(const std::vector<std::optional<std::string>>& bytes, int64_t vocab);
  int64_t vocab() const { return vocab_; }

  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> kids;  // byte -> node, by byte
    std::vector<int32_t> tokens;                    // tokens whose bytes end here
  };
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::string* bytes_of(int32_t id) const;

 private:
  std::vector<Node> nodes_;
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
  // Advances over a token (an end id is not text: it only ends). kValue for a token the grammar
  // does not allow here (the caller masked with allowed(), so this is a broken invariant).
  void accept(int32_t token);
  bool accepting() const { return state_.accepting(); }
  bool finished() const { return state_.finished(); }
  size_t cached_masks() const { return cache_.size(); }

 private:
  // One mask computation: the states met while walking the trie, interned, and the transitions
  // between them by byte, so a walk over a free-text state (where most bytes lead back to the same
  // state) costs a table lookup per trie node rather than a parse-stack update.
  struct Walk {
    std::vector<GrammarState> states;
    std::unordered_map<std::string, int32_t> ids;
    std::vector<int32_t> next;  // [state * 256 + byte] -> state; -1: dead, -3: not yet known
  };
  int32_t step(Walk& w, int32_t state, uint8_t byte) const;
  void walk(Walk& w, int32_t node, int32_t state, std::vector<uint64_t>& mask) const;
  void walk_plain(int32_t node, const GrammarState& state, std::vector<uint64_t>& mask) const;

  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const TokenTrie> trie_;
  std::vector<int32_t> end_ids_;
  GrammarState state_;
  std::unordered_map<std::string, std::shared_ptr<const std::vector<uint64_t>>> cache_;
  std::shared_ptr<const std::vector<uint64_t>> current_;
};

}  // namespace spore::nlp::detail
