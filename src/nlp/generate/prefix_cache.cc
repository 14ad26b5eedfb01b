#include "nlp/generate/prefix_cache.h"

#include <algorithm>

namespace spore::nlp::detail {

namespace {
int64_t common_prefix(std::span<const int32_t> a, std::span<const int32_t> b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return (int64_t)i;
}
}  // namespace

PrefixCache::Choice PrefixCache::admit(std::span<const int32_t> prompt, const std::vector<bool>& slot_used,
                                       bool enabled) {
  Choice c;
  if (!enabled) {
    for (size_t s = 0; s < slot_used.size(); ++s)
      if (!slot_used[s]) {
        c.slot = (int32_t)s;
        break;
      }
    if (c.slot >= 0) held_[(size_t)c.slot].clear();
    return c;
  }
  // The longest match wins; among equal matches (a miss included) the least recently used slot,
  // so a slot never used goes first and a recent conversation's rows are the last to go.
  for (size_t s = 0; s < slot_used.size(); ++s) {
    if (slot_used[s]) continue;
    const int64_t m = std::min<int64_t>(common_prefix(held_[s], prompt), (int64_t)prompt.size() - 1);
    if (c.slot < 0 || m > c.reuse || (m == c.reuse && last_used_[s] < last_used_[(size_t)c.slot])) {
      c.slot = (int32_t)s;
      c.reuse = m;
    }
  }
  if (c.slot < 0) return c;
  std::vector<int32_t>& h = held_[(size_t)c.slot];
  ++stats_.lookups;
  if (c.reuse > 0) {
    ++stats_.hits;
    stats_.reused_tokens += (uint64_t)c.reuse;
  } else if (!h.empty()) {
    ++stats_.evictions;
  }
  h.resize((size_t)c.reuse);  // rows past the reused prefix are about to be overwritten
  last_used_[(size_t)c.slot] = ++tick_;
  return c;
}

void PrefixCache::clear() {
  for (auto& h : held_) h.clear();
}

}  // namespace spore::nlp::detail
