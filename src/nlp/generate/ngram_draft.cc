// Prompt-lookup drafting (NOTE [Speculative decoding]).
#include "nlp/generate/ngram_draft.h"

#include <algorithm>

namespace spore::nlp::detail {

std::vector<int32_t> ngram_draft(std::span<const int32_t> h, int64_t ngram_min, int64_t ngram_max,
                                 int64_t max_tokens) {
  const int64_t len = (int64_t)h.size();
  if (max_tokens < 1 || ngram_min < 1) return {};
  for (int64_t n = std::min(ngram_max, len - 1); n >= ngram_min; --n) {
    const int64_t suffix = len - n;
    // Latest first: the nearest occurrence is the likeliest to be the run being copied. The
    // match must end before the suffix itself does (start < suffix), so something follows it.
    for (int64_t start = suffix - 1; start >= 0; --start) {
      if (!std::equal(h.begin() + start, h.begin() + start + n, h.begin() + suffix)) continue;
      const int64_t from = start + n, to = std::min(len, from + max_tokens);
      return std::vector<int32_t>(h.begin() + from, h.begin() + to);
    }
  }
  return {};
}

}  // namespace spore::nlp::detail
