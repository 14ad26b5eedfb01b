// Draft-model speculation (NOTE [Speculative decoding]): a second, smaller model of the same
// vocabulary proposes the tokens the engine's model then verifies in one forward pass. It keeps a
// KV cache of its own, one slot per engine slot, and only ever re-reads the rows a sequence's
// accepted tokens left valid.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "nlp/generate/sampler.h"
#include "spore/nlp/generate.h"
#include "spore/nlp/model.h"

namespace spore::nlp::detail {

// kValue naming both files when the draft's vocabulary differs from the target's: its size, any
// token's text (when both carry a tokenizer) or the BOS/EOS ids.
void check_same_vocabulary(const LoadedModel& target, const LoadedModel& draft);

class DraftModel {
 public:
  DraftModel(std::shared_ptr<const LoadedModel> draft, int64_t slots, int64_t context, DType kv_dtype,
             int64_t prefill_chunk);

  // One sequence's wish for this step. The draft cache's rows [0, *valid) of `slot` hold
  // history[0, *valid); the rest of `history` is fed first. On return `tokens` holds up to
  // max_tokens proposals, `q` the distribution each was drawn from (the sampler's at its options,
  // one-hot at temperature 0), and *valid counts the rows written (history and proposals but the
  // last, which was never fed).
  struct Request {
    int32_t slot = 0;
    std::span<const int32_t> history;
    int64_t max_tokens = 0;
    Sampler* sampler = nullptr;  // the sequence's draft sampler (no penalties)
    bool greedy = false;
    int64_t* valid = nullptr;
    std::vector<int32_t>* tokens = nullptr;
    std::vector<std::vector<double>>* q = nullptr;
  };
  // Every request's proposals, batched across requests: one forward per drafted position (plus
  // prefill pieces of a long catch-up).
  void propose(std::span<Request> requests);

 private:
  std::shared_ptr<const LoadedModel> model_;
  std::unique_ptr<KvCache> cache_;
  int64_t prefill_chunk_;
};

}  // namespace spore::nlp::detail
