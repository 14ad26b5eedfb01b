// Prefix caching by slot reuse (NOTE [Prefix cache] in docs/design.md). The engine's KV cache is
// `slots` rows of `context` tokens, made once. When a sequence leaves its slot, the rows it wrote
// stay there untouched; this table remembers which tokens they hold. A new sequence is admitted
// into the free slot whose held tokens share the longest prefix with its prompt, and starts its
// prefill after that prefix: those rows are reused in place, never copied or recomputed. With no
// match, the least recently used free slot is taken and what it held is forgotten (eviction): the
// memory bound is the cache the engine already has. When a slot still generating holds a longer
// prefix than any free slot (two requests with one system prompt, the second arriving while the
// first runs), the missing rows are copied once from it at admission (row blocks, never per
// token), which is still far cheaper than recomputing them.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "spore/nlp/generate.h"
#include "spore/nlp/model.h"

namespace spore::nlp::detail {

class PrefixCache {
 public:
  explicit PrefixCache(int64_t slots) : held_((size_t)slots), keys_((size_t)slots), last_used_((size_t)slots, 0) {}

  struct Choice {
    int32_t slot = -1;
    int64_t reuse = 0;  // rows of the slot the sequence starts with
  };
  // Picks a slot among the free ones for `prompt` (enabled: the longest held prefix, ties and
  // misses to the least recently used slot; disabled: the lowest free slot, reuse 0). The reuse
  // stops one token short of the prompt: its last token must run to give the next token's logits.
  // Marks the slot as holding prompt[0..reuse) and counts the lookup. When enabled and a busy
  // slot holds a longer prefix, `copy(from, to, begin, end)` is asked to copy its rows
  // [begin, end) into the chosen slot (rows below begin already match); when it returns true the
  // reuse extends to end.
  using CopyRows = std::function<bool(int32_t from, int32_t to, int64_t begin, int64_t end)>;
  // `key` names what else the rows depend on (lora_key: the LoRA adapters and scales, NOTE [LoRA
  // adapters]): only rows written under an equal key are reused or copied.
  Choice admit(std::span<const int32_t> prompt, const std::vector<bool>& slot_used, bool enabled,
               const CopyRows& copy = {}, const std::string& key = {});
  // The sequence in `slot` wrote `tokens` at the rows after those it already held.
  void wrote(int32_t slot, std::span<const int32_t> tokens) { held_[(size_t)slot].insert(held_[(size_t)slot].end(), tokens.begin(), tokens.end()); }
  // The rows' contents are unknown (a forward pass failed part-way): forget everything.
  void clear();
  const std::vector<int32_t>& held(int32_t slot) const { return held_[(size_t)slot]; }
  // Copies rows [begin, end) of slot `from` into slot `to` in every layer's keys and values
  // (contiguous host tensors [slots, kv_heads, context, dim]); false when the layout is not that.
  static bool copy_rows(KvCache& cache, int32_t from, int32_t to, int64_t begin, int64_t end);
  const PrefixCacheStats& stats() const { return stats_; }

 private:
  std::vector<std::vector<int32_t>> held_;  // tokens whose K/V the slot's rows 0..size-1 hold
  std::vector<std::string> keys_;           // the key those rows were written under
  std::vector<uint64_t> last_used_;         // admission tick; 0: never used
  uint64_t tick_ = 0;
  nlp::PrefixCacheStats stats_;
};

}  // namespace spore::nlp::detail
