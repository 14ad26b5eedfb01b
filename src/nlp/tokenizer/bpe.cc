#include "nlp/tokenizer/bpe.h"

#include <algorithm>
#include <queue>

#include "nlp/tokenizer/utf8.h"

namespace spore::nlp::detail {

void PairMap::reserve(size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap <<= 1;
  if (cap <= slots_.size()) return;
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(cap, Slot{});
  mask_ = cap - 1;
  size_ = 0;
  for (const Slot& s : old)
    if (s.key != kEmpty) insert((int32_t)(s.key >> 32), (int32_t)(uint32_t)s.key, s.rank, s.merged);
}

void PairMap::grow() { reserve(std::max<size_t>(16, size_ * 2 + 2)); }

bool PairMap::insert(int32_t a, int32_t b, int32_t rank, int32_t merged) {
  if ((size_ + 1) * 2 > slots_.size()) grow();
  const uint64_t key = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
  size_t i = hash(key) & mask_;
  while (slots_[i].key != kEmpty) {
    if (slots_[i].key == key) return false;
    i = (i + 1) & mask_;
  }
  slots_[i] = Slot{key, rank, merged};
  ++size_;
  return true;
}

namespace {

struct Symbol {
  int32_t id;
  int32_t prev, next;  // -1 at the ends
  uint32_t begin, len;  // bytes of the word (score order); len 0 = merged away
};

// A candidate merge of symbols `left` and its right neighbour; stale once either changed.
struct Candidate {
  float priority;  // lower pops first: the rank, or minus the score
  int32_t left;
  int32_t left_id, right_id;  // rank order: the ids expected; score order: the sizes expected
  int32_t merged;
  bool operator<(const Candidate& o) const {  // std::priority_queue pops the largest
    if (priority != o.priority) return priority > o.priority;
    return left > o.left;
  }
};

}  // namespace

void BpeModel::push_unknown(std::string_view ch, std::vector<int32_t>& ids, bool& last_unk) const {
  if (byte_fallback) {
    bool all = true;
    for (unsigned char b : ch) all = all && byte_ids[b] >= 0;
    if (all) {
      for (unsigned char b : ch) ids.push_back(byte_ids[b]);
      last_unk = false;
      return;
    }
  }
  if (!unk) return;  // Hugging Face drops a character it cannot represent when there is no unk
  if (fuse_unk && last_unk) return;
  ids.push_back(*unk);
  last_unk = true;
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (ignore_merges) {
    auto it = vocab.find(byte_level ? bytes_to_byte_level(word) : std::string(word));
    if (it != vocab.end()) {
      out.push_back(it->second);
      return;
    }
  }
  const bool cacheable = word.size() <= kCacheMaxWord;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto it = cache_.find(word);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t start = out.size();
  if (order == Order::kRank)
    merge_by_rank(word, out);
  else
    merge_by_score(word, out);
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.size() >= kCacheMaxEntries) cache_.clear();
    cache_.emplace(std::string(word), std::vector<int32_t>(out.begin() + start, out.end()));
  }
}

void BpeModel::merge_by_rank(std::string_view word, std::vector<int32_t>& out) const {
  // Initial symbols.
  std::vector<int32_t> ids;
  ids.reserve(word.size());
  if (byte_level) {
    for (unsigned char b : word) {
      if (byte_ids[b] >= 0) {
        ids.push_back(byte_ids[b]);
      } else if (unk) {
        ids.push_back(*unk);
      }
    }
  } else {
    bool last_unk = false;
    size_t i = 0;
    const bool affixes = !continuing_subword_prefix.empty() || !end_of_word_suffix.empty();
    while (i < word.size()) {
      const size_t len = std::min(utf8_length((unsigned char)word[i]), word.size() - i);
      std::string_view ch = word.substr(i, len);
      StringIdMap::const_iterator it;
      if (affixes) {
        std::string s = (i > 0 ? continuing_subword_prefix : std::string()) + std::string(ch) +
                        (i + len == word.size() ? end_of_word_suffix : std::string());
        it = vocab.find(s);
      } else {
        it = vocab.find(ch);
      }
      if (it != vocab.end()) {
        ids.push_back(it->second);
        last_unk = false;
      } else {
        push_unknown(ch, ids, last_unk);
      }
      i += len;
    }
  }
  const int32_t n = (int32_t)ids.size();
  if (n <= 1) {
    out.insert(out.end(), ids.begin(), ids.end());
    return;
  }
  std::vector<Symbol> sym(n);
  for (int32_t k = 0; k < n; ++k) sym[k] = Symbol{ids[k], k - 1, k + 1 < n ? k + 1 : -1, 0, 1};
  std::vector<Candidate> heap_storage;
  heap_storage.reserve(n);
  std::priority_queue<Candidate> heap(std::less<Candidate>(), std::move(heap_storage));
  auto consider = [&](int32_t left) {
    const int32_t right = sym[left].next;
    if (right < 0) return;
    int32_t rank, merged;
    if (merges.find(sym[left].id, sym[right].id, rank, merged))
      heap.push(Candidate{(float)rank, left, sym[left].id, sym[right].id, merged});
  };
  // Ranks fit a float exactly below 2^24 (16.7M merges); vocabularies are far smaller.
  for (int32_t k = 0; k + 1 < n; ++k) consider(k);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    Symbol& l = sym[c.left];
    if (l.len == 0 || l.id != c.left_id || l.next < 0) continue;
    Symbol& r = sym[l.next];
    if (r.id != c.right_id) continue;
    l.id = c.merged;
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) sym[r.next].prev = c.left;
    if (l.prev >= 0) consider(l.prev);
    consider(c.left);
  }
  for (int32_t k = 0; k >= 0; k = sym[k].next) out.push_back(sym[k].id);
}

void BpeModel::merge_by_score(std::string_view word, std::vector<int32_t>& out) const {
  // Symbols are characters (byte spans of the word); a pair merges when its text is a token.
  std::vector<Symbol> sym;
  sym.reserve(word.size());
  for (size_t i = 0; i < word.size();) {
    const size_t len = std::min(utf8_length((unsigned char)word[i]), word.size() - i);
    const int32_t k = (int32_t)sym.size();
    sym.push_back(Symbol{-1, k - 1, k + 1, (uint32_t)i, (uint32_t)len});
    i += len;
  }
  if (sym.empty()) return;
  sym.back().next = -1;
  std::priority_queue<Candidate> heap;
  auto consider = [&](int32_t left) {
    const int32_t right = sym[left].next;
    if (right < 0) return;
    auto it = vocab.find(word.substr(sym[left].begin, sym[left].len + sym[right].len));
    if (it == vocab.end()) return;
    const float score = (size_t)it->second < scores.size() ? scores[it->second] : 0.0f;
    heap.push(Candidate{-score, left, (int32_t)sym[left].len, (int32_t)sym[right].len, it->second});
  };
  for (int32_t k = 0; k + 1 < (int32_t)sym.size(); ++k) consider(k);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    Symbol& l = sym[c.left];
    if (l.len != (uint32_t)c.left_id || l.next < 0) continue;
    Symbol& r = sym[l.next];
    if (r.len != (uint32_t)c.right_id) continue;
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) sym[r.next].prev = c.left;
    if (l.prev >= 0) consider(l.prev);
    consider(c.left);
  }
  bool last_unk = false;
  for (int32_t k = 0; k >= 0; k = sym[k].next) {
    std::string_view text = word.substr(sym[k].begin, sym[k].len);
    auto it = vocab.find(text);
    if (it != vocab.end()) {
      out.push_back(it->second);
      last_unk = false;
    } else {
      push_unknown(text, out, last_unk);
    }
  }
}

}  // namespace spore::nlp::detail
