#include "nlp/generate/prefix_cache.h"

#include <algorithm>
#include <cstring>

namespace spore::nlp::detail {

namespace {
int64_t common_prefix(std::span<const int32_t> a, std::span<const int32_t> b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return (int64_t)i;
}

// The rows of `held` a prompt may reuse: its common prefix, leaving at least the prompt's last
// two tokens to compute (one for the logits, and a second so that the computed piece is never a
// single token: ggml numerics compute one query token in decode order, NOTE [LLM numerics], and
// a prompt's logits must not depend on whether the cache served it).
int64_t reusable(std::span<const int32_t> held, std::span<const int32_t> prompt) {
  return std::min<int64_t>(common_prefix(held, prompt), std::max<int64_t>((int64_t)prompt.size() - 2, 0));
}
}  // namespace

PrefixCache::Choice PrefixCache::admit(std::span<const int32_t> prompt, const std::vector<bool>& slot_used,
                                       bool enabled, const CopyRows& copy, const std::string& key) {
  Choice c;
  auto usable = [&](size_t s) { return keys_[s] == key ? reusable(held_[s], prompt) : int64_t{0}; };
  if (!enabled) {
    for (size_t s = 0; s < slot_used.size(); ++s)
      if (!slot_used[s]) {
        c.slot = (int32_t)s;
        break;
      }
    if (c.slot >= 0) {
      held_[(size_t)c.slot].clear();
      keys_[(size_t)c.slot] = key;
    }
    return c;
  }
  // The longest match wins; among equal matches (a miss included) the least recently used slot,
  // so a slot never used goes first and a recent conversation's rows are the last to go.
  for (size_t s = 0; s < slot_used.size(); ++s) {
    if (slot_used[s]) continue;
    const int64_t m = usable(s);
    if (c.slot < 0 || m > c.reuse || (m == c.reuse && last_used_[s] < last_used_[(size_t)c.slot])) {
      c.slot = (int32_t)s;
      c.reuse = m;
    }
  }
  if (c.slot < 0) return c;
  std::vector<int32_t>& h = held_[(size_t)c.slot];
  ++stats_.lookups;
  const bool evicts = c.reuse == 0 && !h.empty();
  // A busy slot with a longer prefix: copy the rows the chosen slot lacks.
  int32_t from = -1;
  int64_t longer = c.reuse;
  if (copy)
    for (size_t s = 0; s < slot_used.size(); ++s) {
      if (!slot_used[s]) continue;
      const int64_t m = usable(s);
      if (m > longer) {
        longer = m;
        from = (int32_t)s;
      }
    }
  h.resize((size_t)c.reuse);  // rows past the reused prefix are about to be overwritten
  keys_[(size_t)c.slot] = key;
  if (from >= 0 && copy(from, c.slot, c.reuse, longer)) {
    h.insert(h.end(), prompt.begin() + c.reuse, prompt.begin() + longer);
    c.reuse = longer;
    ++stats_.copies;
  }
  if (c.reuse > 0) {
    ++stats_.hits;
    stats_.reused_tokens += (uint64_t)c.reuse;
  } else if (evicts) {
    ++stats_.evictions;
  }
  last_used_[(size_t)c.slot] = ++tick_;
  return c;
}

bool PrefixCache::copy_rows(KvCache& cache, int32_t from, int32_t to, int64_t begin, int64_t end) {
  if (begin >= end || from == to) return begin >= end;
  auto fits = [&](const Tensor& t) {
    return t.defined() && t.is_contiguous() && t.ndim() == 4 && t.device().backend == kCpuBackend &&
           from < t.size(0) && to < t.size(0) && end <= t.size(2);
  };
  for (int64_t l = 0; l < cache.layers(); ++l)
    if (!fits(cache.keys(l)) || !fits(cache.values(l))) return false;
  for (int64_t l = 0; l < cache.layers(); ++l)
    for (const Tensor* t : {&cache.keys(l), &cache.values(l)}) {
      const int64_t heads = t->size(1), context = t->size(2);
      const size_t row = (size_t)t->size(3) * t->itemsize();
      auto* base = static_cast<char*>(t->data_ptr());
      // One block per head: rows begin..end-1 are contiguous within a (slot, head).
      for (int64_t h = 0; h < heads; ++h)
        std::memcpy(base + ((size_t)(to * heads + h) * (size_t)context + (size_t)begin) * row,
                    base + ((size_t)(from * heads + h) * (size_t)context + (size_t)begin) * row,
                    (size_t)(end - begin) * row);
    }
  return true;
}

void PrefixCache::clear() {
  for (auto& h : held_) h.clear();
}

}  // namespace spore::nlp::detail
