// Prompt-lookup drafting for speculative decoding (NOTE [Speculative decoding]): no second model,
// only the text so far. Input-grounded generation (summarise, edit, answer about a given text)
// copies runs of the prompt, and a run that started to be copied is likely to go on.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace spore::nlp::detail {

// Up to `max_tokens` tokens proposed to follow `history` (prompt and generated tokens, the last
// one included): for n from ngram_max down to ngram_min, the most recent earlier occurrence of
// the last n tokens proposes the tokens that followed it. Empty when nothing matches.
std::vector<int32_t> ngram_draft(std::span<const int32_t> history, int64_t ngram_min, int64_t ngram_max,
                                 int64_t max_tokens);

}  // namespace spore::nlp::detail
