// Draft-model speculation (NOTE [Speculative decoding]).
#include "nlp/generate/draft_model.h"

#include <algorithm>
#include <string>

#include "spore/error.h"

namespace spore::nlp::detail {

void check_same_vocabulary(const LoadedModel& target, const LoadedModel& draft) {
  const std::string both = " (model " + target.path.string() + ", draft " + draft.path.string() +
                           "); give a draft model trained with the same tokenizer";
  auto mismatch = [&](const std::string& what) {
    throw Error(ErrorCode::kValue, "speculative decoding: the draft model's vocabulary differs: " + what + both);
  };
  const int64_t tv = target.lm->config().vocab_size, dv = draft.lm->config().vocab_size;
  if (tv != dv) mismatch(std::to_string(dv) + " tokens against " + std::to_string(tv));
  if (target.tokenizer && draft.tokenizer) {
    const Tokenizer &a = *target.tokenizer, &b = *draft.tokenizer;
    if (a.vocab_size() != b.vocab_size())
      mismatch("its tokenizer has " + std::to_string(b.vocab_size()) + " tokens against " + std::to_string(a.vocab_size()));
    for (int32_t id = 0; id < a.vocab_size(); ++id)
      if (a.id_to_token(id) != b.id_to_token(id))
        mismatch("token " + std::to_string(id) + " is '" + b.id_to_token(id) + "' against '" + a.id_to_token(id) + "'");
    if (a.bos_id() != b.bos_id()) mismatch("the BOS ids differ");
    if (a.eos_id() != b.eos_id()) mismatch("the EOS ids differ");
  }
}

DraftModel::DraftModel(std::shared_ptr<const LoadedModel> draft, int64_t slots, int64_t context, DType kv_dtype,
                       int64_t prefill_chunk)
    : model_(std::move(draft)), prefill_chunk_(prefill_chunk) {
  const int64_t max = model_->lm->config().max_position_embeddings;
  if (max > 0 && context > max)
    throw Error(ErrorCode::kValue, "speculative decoding: the draft model (" + model_->path.string() + ") takes " +
                                       std::to_string(max) + " positions, fewer than the context of " +
                                       std::to_string(context) + "; lower --ctx or give another draft model");
  cache_ = model_->lm->make_cache(slots, context, kv_dtype);
}

void DraftModel::propose(std::span<Request> requests) {
  CausalLM& lm = *model_->lm;
  const int64_t vocab = lm.config().vocab_size;
  // Catch-up pieces before the last: rows only, no logits wanted.
  for (;;) {
    std::vector<SequenceChunk> pieces;
    for (Request& r : requests) {
      const int64_t left = (int64_t)r.history.size() - *r.valid;
      if (left <= prefill_chunk_) continue;
      pieces.push_back({r.slot, *r.valid, r.history.subspan((size_t)*r.valid, (size_t)prefill_chunk_)});
      *r.valid += prefill_chunk_;
    }
    if (pieces.empty()) break;
    lm.forward(pieces, *cache_);
  }
  for (Request& r : requests) {
    r.tokens->clear();
    r.q->clear();
    // Round 0 needs at least one token to run for the first proposal's logits.
    if (*r.valid >= (int64_t)r.history.size()) *r.valid = (int64_t)r.history.size() - 1;
  }
  // Round 0 feeds the rest of each history; round i > 0 the proposal of round i - 1.
  for (int64_t round = 0;; ++round) {
    std::vector<SequenceChunk> chunks;
    std::vector<Request*> who;
    for (Request& r : requests) {
      if ((int64_t)r.tokens->size() >= r.max_tokens) continue;
      SequenceChunk c;
      c.slot = r.slot;
      c.position = *r.valid;
      if (round == 0)
        c.tokens = r.history.subspan((size_t)*r.valid);
      else
        c.tokens = std::span<const int32_t>(&r.tokens->back(), 1);
      if (c.tokens.empty()) continue;
      chunks.push_back(c);
      who.push_back(&r);
    }
    if (chunks.empty()) return;
    const Tensor logits = lm.forward(chunks, *cache_).contiguous();
    if (logits.ndim() != 2 || logits.size(0) != (int64_t)chunks.size() || logits.size(1) != vocab)
      throw Error(ErrorCode::kInternal, "speculative decoding: the draft model returned " + logits.str());
    const float* base = logits.data<float>();
    for (size_t i = 0; i < who.size(); ++i) {
      Request& r = *who[i];
      *r.valid += (int64_t)chunks[i].tokens.size();
      const std::span<const float> row(base + i * (size_t)vocab, (size_t)vocab);
      std::vector<double> q = r.sampler->distribution(row);
      r.tokens->push_back(r.greedy ? argmax(q) : r.sampler->draw(q));
      r.q->push_back(std::move(q));
    }
  }
}

}  // namespace spore::nlp::detail
