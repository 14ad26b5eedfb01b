// llama-perplexity's computation over Spore's batched forward (NOTE [Perplexity]).
#include "spore/nlp/perplexity.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "nlp/tokenizer/pipeline.h"
#include "spore/error.h"
#include "spore/nlp/model.h"

namespace spore::nlp {

double PerplexityStats::ppl() const {
  return count > 0 ? std::exp(nll_sum / static_cast<double>(count)) : std::numeric_limits<double>::quiet_NaN();
}

double PerplexityStats::ppl_error() const {
  if (count < 2) return 0;
  const double n = static_cast<double>(count);
  const double mean = nll_sum / n;
  const double var = nll2_sum / n - mean * mean;  // the population variance of the NLLs
  // llama.cpp reports no error bar when rounding makes the variance non-positive.
  return var > 0 ? std::sqrt(var / (n - 1)) * ppl() : 0;
}

void PerplexityStats::add(const float* logits, int64_t rows, int64_t vocab, std::span<const int32_t> targets) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = logits + r * vocab;
    // The same roundings as llama.cpp's log_softmax: the shift in float, expf, the sum in double.
    float max_logit = row[0];
    for (int64_t i = 1; i < vocab; ++i) max_logit = std::max(max_logit, row[i]);
    double sum_exp = 0;
    for (int64_t i = 0; i < vocab; ++i) sum_exp += std::exp(row[i] - max_logit);
    const double v = -((row[targets[static_cast<size_t>(r)]] - max_logit) - std::log(sum_exp));
    nll_sum += v;
    nll2_sum += v * v;
    ++count;
  }
}

std::optional<int32_t> perplexity_bos(const Tokenizer& tokenizer) {
  const auto& post = tokenizer.impl().post;
  if (!post || !tokenizer.bos_id()) return std::nullopt;
  // BOS counts when the template puts it before the sequence (llama_vocab_get_add_bos).
  for (int32_t id : post->single) {
    if (id == -1) break;
    if (id == *tokenizer.bos_id()) return id;
  }
  return std::nullopt;
}

PerplexityResult perplexity(CausalLM& lm, std::span<const int32_t> tokens, std::optional<int32_t> bos,
                            const PerplexityOptions& options,
                            const std::function<void(int64_t, int64_t, const PerplexityStats&)>& on_chunk) {
  const int64_t ctx = options.context;
  const int64_t n_tokens = static_cast<int64_t>(tokens.size());
  if (ctx < 4)
    throw Error(ErrorCode::kValue, "perplexity: --ctx is " + std::to_string(ctx) +
                                       "; give at least 4 (only the second half of each chunk is scored)");
  const int64_t model_ctx = lm.config().max_position_embeddings;
  if (model_ctx > 0 && ctx > model_ctx)
    throw Error(ErrorCode::kValue, "perplexity: --ctx " + std::to_string(ctx) + " exceeds the model's context of " +
                                       std::to_string(model_ctx) + " tokens; give at most " + std::to_string(model_ctx));
  const int64_t batch = options.batch == 0 ? ctx : options.batch;
  if (batch < 1 || (batch > ctx && batch % ctx != 0))
    throw Error(ErrorCode::kValue, "perplexity: --batch " + std::to_string(batch) + " must be below --ctx " +
                                       std::to_string(ctx) + " or a multiple of it");
  if (n_tokens < 2 * ctx)
    throw Error(ErrorCode::kValue, "perplexity: the text tokenizes to " + std::to_string(n_tokens) +
                                       " tokens; a context of " + std::to_string(ctx) + " needs at least " +
                                       std::to_string(2 * ctx) + " (give a longer --file or a smaller --ctx)");

  PerplexityResult result;
  result.tokens = n_tokens;
  result.chunks = n_tokens / ctx;
  if (options.max_chunks > 0) result.chunks = std::min(result.chunks, options.max_chunks);
  const int64_t first = ctx / 2;
  result.scored_per_chunk = ctx - first - 1;
  // batch >= ctx: batch / ctx chunks side by side (one cache slot each); else one chunk in pieces.
  const int64_t n_seq = std::max<int64_t>(1, batch / ctx);
  const int64_t piece = std::min(batch, ctx);
  auto cache = lm.make_cache(n_seq, ctx, options.kv_dtype);
  const int64_t vocab = lm.config().vocab_size;

  std::vector<std::vector<int32_t>> chunk_tokens(static_cast<size_t>(n_seq));
  std::vector<std::vector<float>> scored(static_cast<size_t>(n_seq));
  for (int64_t i = 0; i < result.chunks; i += n_seq) {
    const int64_t seqs = std::min(n_seq, result.chunks - i);
    for (int64_t s = 0; s < seqs; ++s) {
      auto& ct = chunk_tokens[static_cast<size_t>(s)];
      const auto begin = tokens.begin() + (i + s) * ctx;
      ct.assign(begin, begin + ctx);
      if (bos) ct[0] = *bos;
      scored[static_cast<size_t>(s)].clear();
    }
    // Positions restart at 0 in every slot: the cache rows of the previous chunk are overwritten
    // before attention reads them, as llama_memory_clear would leave them unread.
    for (int64_t at = 0; at < ctx; at += piece) {
      const int64_t len = std::min(piece, ctx - at);
      std::vector<SequenceChunk> chunks(static_cast<size_t>(seqs));
      for (int64_t s = 0; s < seqs; ++s) {
        SequenceChunk& c = chunks[static_cast<size_t>(s)];
        c.slot = static_cast<int32_t>(s);
        c.position = at;
        c.tokens = std::span<const int32_t>(chunk_tokens[static_cast<size_t>(s)]).subspan(static_cast<size_t>(at),
                                                                                         static_cast<size_t>(len));
        c.all_logits = true;
      }
      const Tensor logits = lm.forward(chunks, *cache);
      if (logits.size(1) != vocab)
        throw Error(ErrorCode::kValue, "perplexity: the model returned " + std::to_string(logits.size(1)) +
                                           " logits per token for a vocabulary of " + std::to_string(vocab));
      const std::vector<float> v = logits.to_vector<float>();
      // Keep only the rows at positions >= first (llama-perplexity asks for no others).
      for (int64_t s = 0; s < seqs; ++s)
        for (int64_t k = std::max<int64_t>(0, first - at); k < len; ++k) {
          const float* row = v.data() + static_cast<size_t>((s * len + k) * vocab);
          scored[static_cast<size_t>(s)].insert(scored[static_cast<size_t>(s)].end(), row, row + vocab);
        }
    }
    for (int64_t s = 0; s < seqs; ++s) {
      // Row r (position first + r) predicts the original token at first + r + 1.
      const auto targets = tokens.subspan(static_cast<size_t>((i + s) * ctx + first + 1),
                                          static_cast<size_t>(result.scored_per_chunk));
      result.stats.add(scored[static_cast<size_t>(s)].data(), result.scored_per_chunk, vocab, targets);
      result.running.push_back(result.stats.ppl());
      if (on_chunk) on_chunk(i + s, result.chunks, result.stats);
    }
  }
  return result;
}

}  // namespace spore::nlp
