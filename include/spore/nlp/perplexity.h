// Perplexity of a causal language model over a token stream, computed exactly as llama.cpp's
// `llama-perplexity` computes it (NOTE [Perplexity] in docs/design.md), so that a user who checks
// a quantized file with Spore gets the figure llama.cpp users quote:
//   - the text is tokenized once, with the tokenizer's special tokens (BOS when it adds one);
//   - it is cut into floor(tokens / ctx) chunks of ctx tokens (the tail is dropped), each run from
//     an empty cache, its first token replaced by BOS when the tokenizer adds one;
//   - in each chunk only the second half is scored: the logits at positions ctx/2 .. ctx-2 predict
//     the tokens after them (ctx - ctx/2 - 1 tokens per chunk), so every scored token has at
//     least ctx/2 tokens of context;
//   - PPL = exp(mean NLL); its error bar is PPL * sqrt((mean(NLL^2) - mean(NLL)^2) / (n - 1)).
//
//   auto m = spore::nlp::load_model(path);
//   auto ids = m.tokenizer->encode(text, true);
//   auto r = spore::nlp::perplexity(*m.lm, ids, spore::nlp::perplexity_bos(*m.tokenizer), {});
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "spore/dtype.h"

namespace spore::nlp {

class CausalLM;
class Tokenizer;

struct PerplexityOptions {
  int64_t context = 512;  // tokens per chunk (llama-perplexity's --ctx-size)
  // Tokens per forward call (llama-perplexity's --batch-size): below `context` a chunk runs in
  // several calls; a multiple of `context` runs batch/context chunks together in one call.
  // 0: one chunk per call.
  int64_t batch = 0;
  DType kv_dtype = DType::kFloat16;  // llama.cpp's cache is float16
  int64_t max_chunks = 0;            // run only the first chunks (llama-perplexity's --chunks); 0: all
};

// The running sums after each chunk: NLL and NLL^2 summed over the tokens scored so far.
struct PerplexityStats {
  double nll_sum = 0, nll2_sum = 0;
  int64_t count = 0;
  double ppl() const;        // exp(nll_sum / count); NaN before any token
  double ppl_error() const;  // llama.cpp's error bar (0 when fewer than two tokens)
  // Adds the scored tokens of one chunk: logits [rows, vocab] (float32, row r at chunk position
  // first + r) predict targets[r]; NLL per token as llama.cpp's log_softmax forms it (float
  // logits minus their maximum, expf, the sum in double).
  void add(const float* logits, int64_t rows, int64_t vocab, std::span<const int32_t> targets);
};

struct PerplexityResult {
  int64_t tokens = 0;          // the whole text's tokens
  int64_t chunks = 0;          // chunks run
  int64_t scored_per_chunk = 0;
  PerplexityStats stats;
  std::vector<double> running;  // the estimate after each chunk (llama-perplexity's "[i]x.xxxx,")
};

// The BOS id llama-perplexity writes at the start of every chunk: the tokenizer's BOS when its
// post-processor adds BOS to a single sequence, else none.
std::optional<int32_t> perplexity_bos(const Tokenizer& tokenizer);

// Runs every chunk through `lm`. `on_chunk(index, chunks, stats)` is called after each chunk.
// kValue when the tokens are fewer than 2 * context (llama-perplexity's minimum), context < 2,
// the context exceeds the model's, or batch is neither below context nor a multiple of it.
PerplexityResult perplexity(CausalLM& lm, std::span<const int32_t> tokens, std::optional<int32_t> bos,
                            const PerplexityOptions& options,
                            const std::function<void(int64_t, int64_t, const PerplexityStats&)>& on_chunk = {});

}  // namespace spore::nlp
