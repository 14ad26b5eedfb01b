// The sampler of one sequence (NOTE [Generation]): penalties over the recent tokens, then the
// filters in llama.cpp's default order (top-k, top-p, min-p, temperature), then a seeded draw.
// Internal to the engine; the tests drive it directly against float64 references.
#pragma once
#include <cstdint>
#include <deque>
#include <random>
#include <span>
#include <unordered_map>
#include <vector>

#include "spore/nlp/generate.h"

namespace spore::nlp::detail {

// Throws kValue naming the field when an option is outside its domain (temperature < 0, top_p not
// in (0, 1], min_p not in [0, 1], top_k < 0, repetition_penalty <= 0, penalty_last_n < -1,
// top_logprobs outside [0, 20], a penalty or temperature that is not finite).
void validate_sampling(const SamplingOptions& o);

struct Draw {
  int32_t id = 0;
  float logprob = 0;                  // log-softmax of the raw logits (before penalties, filters)
  std::vector<TokenLogprob> top;      // the top_logprobs most likely tokens under the same
};

class Sampler {
 public:
  // vocab: the logits row length. The RNG is std::mt19937_64 seeded with options.seed (or the
  // clock and std::random_device when unset); its output sequence is fixed by the standard, and the
  // draw converts it to a double by hand, so a seed gives the same tokens on every platform.
  Sampler(const SamplingOptions& options, int64_t vocab);

  // Whether sample(logits) kept only when its token is in a mask, else sample(logits, mask) again,
  // draws exactly as sample(logits, mask): greedy (the argmax, if allowed, is the masked argmax),
  // or no top-k / top-p / min-p (rejection sampling; the filters would otherwise cut the full
  // distribution, not the masked one). NOTE [Grammars].
  bool unmasked_draw_is_exact() const {
    return o_.temperature == 0 || ((o_.top_k == 0 || o_.top_k >= vocab_) && o_.top_p >= 1.0 && o_.min_p == 0);
  }

  // Records a token the model saw (prompt or generated) in the penalty window.
  void accept(int32_t token);

  // Samples one token from a logits row of `vocab` floats. kValue for a NaN logit. `allowed`, when
  // given, is a bit per id (a grammar's mask): the other ids are dropped before the filters.
  Draw sample(std::span<const float> logits, const std::vector<uint64_t>* allowed = nullptr);

  // Speculative decoding's verification of a drafted token (NOTE [Speculative decoding]): `q` is
  // the distribution the draft was drawn from (empty: a point mass on `draft`, as prompt lookup
  // proposes). At temperature 0 this is sample(): the caller compares the argmax with the draft.
  // Otherwise the standard rule: keep `draft` with probability min(1, p(draft) / q(draft)), else
  // draw from max(0, p - q) normalised, so the token returned is distributed as p, whatever q.
  // A returned id equal to `draft` means the draft was accepted.
  Draw verify(std::span<const float> logits, const std::vector<uint64_t>* allowed, int32_t draft,
              std::span<const double> q = {});

  // The probability of every id after penalties, the mask, filters and temperature (one-hot on the
  // argmax for temperature 0): what sample() draws from.
  std::vector<double> distribution(std::span<const float> logits, const std::vector<uint64_t>* allowed = nullptr) const;

  // A draw from an explicit distribution (weights summing to about 1) with this sampler's
  // generator: a draft model's proposal from its own distribution.
  int32_t draw(std::span<const double> probs);

  // The penalised logits (repetition, presence, frequency over the window), as float64.
  std::vector<double> penalised(std::span<const float> logits) const;

 private:
  struct Candidates {
    std::vector<int32_t> ids;
    std::vector<double> probs;  // normalised
  };
  Candidates filter(const std::vector<double>& logits) const;
  std::vector<double> masked(std::span<const float> logits, const std::vector<uint64_t>* allowed) const;
  void report_logprobs(std::span<const float> logits, Draw& d) const;
  double uniform();  // [0, 1) from 53 bits of the generator

  SamplingOptions o_;
  int64_t vocab_;
  std::mt19937_64 rng_;
  std::deque<int32_t> window_;
  std::unordered_map<int32_t, int32_t> counts_;
};

// Index of the largest value, ties to the lowest index.
int32_t argmax(std::span<const double> v);

// Sets every logit whose bit in `allowed` (one bit per id) is clear to -inf. A word at a time: a
// grammar's masks are mostly all-clear or all-set words (NOTE [Grammars]), so the cost is the
// row's length in words, not a bit test per id. kInternal for a mask shorter than the row.
void apply_token_mask(std::span<double> logits, const std::vector<uint64_t>& allowed);

}  // namespace spore::nlp::detail
