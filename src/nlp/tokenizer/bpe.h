// The BPE model: a word (one pre-token) to ids. Two merge orders (NOTE [Tokenizers]):
//  - by rank, as Hugging Face's BPE model: the pair with the lowest merge rank first, leftmost on
//    ties; initial symbols are bytes (byte-level) or characters with byte fallback / unk;
//  - by score, as SentencePiece BPE and llama.cpp's "llama" vocabularies: the adjacent pair whose
//    concatenation is a token with the highest score first, leftmost on ties.
// Both keep the symbols in a linked list and candidate merges in a binary heap, so a piece of n
// symbols costs O(n log n), never a rescan per merge. Words are cached.
#pragma once
#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace spore::nlp::detail {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept {
    // FNV-1a over 8-byte words: token lookups are short strings.
    uint64_t h = 1469598103934665603ULL ^ s.size();
    size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
      uint64_t w;
      __builtin_memcpy(&w, s.data() + i, 8);
      h = (h ^ w) * 1099511628211ULL;
      h ^= h >> 29;
    }
    for (; i < s.size(); ++i) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    h ^= h >> 33;  // murmur3's finaliser: every input bit reaches the low (bucket) bits
    h *= 0xff51afd7ed558ccdULL;
    return (size_t)(h ^ (h >> 33));
  }
};
}  // namespace spore::nlp::detail

#ifdef __GLIBCXX__
// libstdc++ stores each node's hash only for hashes it does not consider fast; with the hash
// stored, a bucket walk compares hashes before strings and a rehash does not rehash every key
// (half of a 151 K-token load was spent in those string compares).
template <>
struct std::__is_fast_hash<spore::nlp::detail::StringHash> : std::false_type {};
#endif

namespace spore::nlp::detail {
using StringIdMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

// (left id, right id) -> (rank, merged id), open addressing.
class PairMap {
 public:
  void reserve(size_t n);
  // False when the pair is already present (a duplicate merge keeps its first, lowest rank).
  bool insert(int32_t a, int32_t b, int32_t rank, int32_t merged);
  bool find(int32_t a, int32_t b, int32_t& rank, int32_t& merged) const {
    if (slots_.empty()) return false;
    const uint64_t key = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    size_t i = hash(key) & mask_;
    while (true) {
      const Slot& s = slots_[i];
      if (s.key == kEmpty) return false;
      if (s.key == key) {
        rank = s.rank;
        merged = s.merged;
        return true;
      }
      i = (i + 1) & mask_;
    }
  }
  size_t size() const { return size_; }

 private:
  static constexpr uint64_t kEmpty = ~0ULL;
  struct Slot {
    uint64_t key = kEmpty;
    int32_t rank = 0, merged = 0;
  };
  static size_t hash(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return (size_t)k;
  }
  void grow();
  std::vector<Slot> slots_;
  size_t mask_ = 0, size_ = 0;
};

struct BpeModel {
  enum class Order { kRank, kScore };
  Order order = Order::kRank;
  // Words arrive as raw bytes and start as one symbol per byte (the byte-level pre-tokenizer's
  // mapping is folded into byte_ids); otherwise one symbol per character.
  bool byte_level = false;
  bool byte_fallback = false;
  bool fuse_unk = false;
  bool ignore_merges = false;  // a word that is itself a token is that token (Llama 3)
  std::optional<int32_t> unk;
  std::string continuing_subword_prefix, end_of_word_suffix;
  StringIdMap vocab;                    // token text -> id (model vocabulary)
  std::array<int32_t, 256> byte_ids{};  // byte-level: the byte's character; else <0xNN>; -1 none
  PairMap merges;                       // Order::kRank
  std::vector<float> scores;            // Order::kScore, by id

  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

 private:
  void merge_by_rank(std::string_view word, std::vector<int32_t>& out) const;
  void merge_by_score(std::string_view word, std::vector<int32_t>& out) const;
  void push_unknown(std::string_view ch, std::vector<int32_t>& ids, bool& last_unk) const;

  static constexpr size_t kCacheMaxWord = 256;
  static constexpr size_t kCacheMaxEntries = 1 << 17;
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> cache_;
};

}  // namespace spore::nlp::detail
