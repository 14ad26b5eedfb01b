// Generation (NOTE [Generation] in docs/design.md): sampling, stop conditions, streaming text, and
// an engine that runs several sequences at once over one model and one KV cache: each step
// batches every active sequence's next chunk (a prefill piece or one decode token) into one
// forward pass, so the server's continuous batching is this engine driven by a request queue.
//
//   auto m = spore::nlp::load_model(spore::nlp::default_model_path(), {.require_tokenizer = true});
//   spore::nlp::GenerateOptions o;
//   o.max_tokens = 64;
//   o.sampling.temperature = 0;  // greedy
//   auto r = spore::nlp::generate(m, "The capital of France is", o,
//                                 [](std::string_view text) { std::cout << text << std::flush; });
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "spore/nlp/grammar.h"
#include "spore/nlp/lora.h"
#include "spore/nlp/model.h"

namespace spore::nlp {

struct SamplingOptions {
  double temperature = 1.0;  // 0: greedy (argmax; ties to the lowest id)
  int64_t top_k = 0;         // 0: off
  double top_p = 1.0;        // 1: off
  double min_p = 0.0;        // 0: off
  double repetition_penalty = 1.0;  // llama.cpp/HF: logit / p if > 0 else logit * p, seen tokens
  double presence_penalty = 0.0;    // OpenAI: minus once per distinct seen token
  double frequency_penalty = 0.0;   // OpenAI: minus per occurrence
  int64_t penalty_last_n = 64;      // window of seen tokens the penalties look at (-1: all)
  std::optional<uint64_t> seed;     // fixed: reproducible; else from the clock
  bool logprobs = false;            // report each sampled token's logprob (SequenceEvent::logprob)
  int64_t top_logprobs = 0;         // > 0 (at most 20): report that many alternatives per token
};
// Order (llama.cpp's default chain): penalties over the last penalty_last_n tokens the sequence
// saw (prompt and generated), then top-k, top-p and min-p on the model's distribution, then the
// temperature, then a draw. Logprobs are those of the model's raw distribution (before penalties
// and filters). GenerateOptions::apply_model_defaults fills a field from the model's
// generation_config.json only where it still holds the default value above.

// kGrammarDeadEnd: the grammar allows no token here (none of the vocabulary continues the text
// and it is not a complete sentence, or its parse stacks passed GrammarLimits::max_stacks:
// SequenceEvent::error says so), so the sequence ends rather than waiting forever.
enum class FinishReason { kNone, kStop, kLength, kCancelled, kError, kGrammarDeadEnd };
// "stop", "length", "cancelled", "error", "grammar_dead_end"
const char* finish_reason_name(FinishReason r);

// Speculative decoding (NOTE [Speculative decoding]): each decode step drafts up to draft_max
// tokens cheaply and the model verifies them in the same forward pass as the step's own token
// (logits at every draft position); the accepted ones cost no step of their own. Under greedy the
// tokens are exactly those without speculation; under sampling their distribution is (the
// standard acceptance rule), though a seed gives other draws than without it.
//   kNgram: prompt lookup: the longest suffix of the text so far (ngram_max tokens down to
//           ngram_min) found earlier in the prompt or the output proposes what followed it there.
//   kDraft: a second, smaller model of the same vocabulary (EngineOptions::draft) proposes them.
struct SpeculativeOptions {
  enum class Type { kNone, kNgram, kDraft };
  Type type = Type::kNone;
  int64_t draft_max = 8;  // tokens drafted per step at most (llama.cpp's --spec-draft-n-max)
  int64_t ngram_max = 3;  // kNgram: the longest suffix looked up
  int64_t ngram_min = 1;  // kNgram: the shortest suffix that may propose a draft
};
// "none", "ngram", "draft"
const char* speculative_type_name(SpeculativeOptions::Type t);
// The names above, and llama.cpp's --spec-type spellings "ngram-simple" and "draft-simple"; kValue
// naming the accepted names otherwise.
SpeculativeOptions::Type parse_speculative_type(const std::string& name);
// kValue naming the field when draft_max is outside [1, 64] or the n-gram sizes outside
// 1 <= ngram_min <= ngram_max <= 16.
void validate_speculative(const SpeculativeOptions& o);

struct GenerateOptions {
  SamplingOptions sampling;
  SpeculativeOptions speculative;
  int64_t max_tokens = 256;
  std::vector<std::string> stop;  // stop strings: generation ends before the first match
  std::vector<int32_t> eos_ids;   // empty: the model's (config, generation_config.json, GGUF)
  bool ignore_eos = false;
  bool apply_model_defaults = true;  // start from LoadedModel::generation
  // Constrained decoding (NOTE [Grammars]): each step samples only tokens that continue a
  // sentence of the grammar; EOS only once the text is one; a text that is complete with nothing
  // able to follow ends as kStop. Needs the model's tokenizer.
  std::shared_ptr<const Grammar> grammar;
  // LoRA adapters this sequence runs (NOTE [LoRA adapters]), loaded for the engine's model; other
  // sequences of the same batch may run others or none. The prefix cache reuses rows only between
  // sequences with the same adapters and scales.
  std::vector<LoraUse> lora;
};

struct TokenLogprob {
  int32_t id = 0;
  float logprob = 0;
};

// What one step produced for one sequence.
struct SequenceEvent {
  uint64_t sequence = 0;
  std::optional<int32_t> token;  // the sampled token, if any this step (an EOS token too, which
                                 // finishes the sequence and adds no text)
  bool eos = false;              // the token is one of the sequence's EOS ids
  std::string text;              // newly complete UTF-8 text (held back while a stop string may match)
  float logprob = 0;             // when SamplingOptions::logprobs or top_logprobs
  std::vector<TokenLogprob> top_logprobs;
  FinishReason finished = FinishReason::kNone;
  std::string error;  // kError: what went wrong (a NaN logit, ...); the other sequences go on.
                      // kGrammarDeadEnd: set when the grammar's state exploded
};

// prompt_ms: from the sequence's first prefill step to its first token (the prefill's speed);
// first_token_ms: from add() to the first token (queueing included); total_ms: add() to the end.
// generated_tokens counts every sampled token, an EOS too; decode speed is over the tokens after
// the first.
// cached_prompt_tokens: the prompt's leading tokens whose KV rows were reused from an earlier
// sequence (EngineOptions::prefix_cache), so prompt_ms covers only the others.
// drafted_tokens / accepted_tokens: speculative decoding's proposals verified, and those the model
// kept (each accepted token is a step saved).
struct Timings {
  int64_t prompt_tokens = 0, generated_tokens = 0, cached_prompt_tokens = 0;
  int64_t drafted_tokens = 0, accepted_tokens = 0;
  double acceptance_rate() const;  // accepted / drafted, 0 when nothing was drafted
  double prompt_ms = 0, first_token_ms = 0, total_ms = 0;
  double grammar_ms = 0;  // in the grammar (token checks, masks, advancing), NOTE [Grammars]
  double prompt_tokens_per_second() const;  // over the tokens computed (not the cached ones)
  double tokens_per_second() const;  // decode
};

// "73.1 MB", "512 B": decimal units, as memory errors and the CLI's figures line print bytes.
std::string format_bytes(uint64_t bytes);

struct EngineOptions {
  int64_t slots = 1;             // sequences at once
  int64_t context = 0;           // tokens per slot (0: min(config max, 4096))
  DType kv_dtype = DType::kFloat16;
  int64_t prefill_chunk = 512;   // tokens of one prompt per step, so decodes are not stalled
  std::optional<uint64_t> max_memory;  // bytes; kValue with the figures when the model,
                                       // cache and scratch would not fit (before allocating)
  // Reuse a free slot's rows when its last sequence shares a prefix with a new prompt (NOTE
  // [Prefix cache]); costs no memory beyond the cache above.
  bool prefix_cache = true;
  // The draft model of speculative decoding's kDraft (NOTE [Speculative decoding]): a smaller
  // model of the same vocabulary (same size, same token texts, same BOS/EOS; kValue naming both
  // files otherwise). It gets a KV cache of its own with the same slots and context.
  std::shared_ptr<const LoadedModel> draft;
};

// Counts since the engine was made (NOTE [Prefix cache]).
struct PrefixCacheStats {
  uint64_t lookups = 0;        // sequences admitted while the prefix cache was on
  uint64_t hits = 0;           // ... that reused at least one row
  uint64_t reused_tokens = 0;  // rows reused, summed
  uint64_t evictions = 0;      // admissions that overwrote a slot's held tokens, none of them matching
  uint64_t copies = 0;         // hits whose rows were (partly) copied from a slot still generating
  uint64_t held_tokens = 0;    // now: rows free slots hold for a later prompt to reuse
};

class Engine {
 public:
  Engine(const LoadedModel& model, const EngineOptions& options = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues a sequence; kValue when the prompt is empty or longer than the context.
  // `still_wanted`, when given, is asked (on the thread that calls step()) just before the queued
  // sequence would take a slot: false ends it as kCancelled before any of it is computed, so a
  // server does not spend a prefill on a client that left while it waited.
  uint64_t add(std::vector<int32_t> prompt, const GenerateOptions& options,
               std::function<bool()> still_wanted = {});
  // Runs one batched forward pass over the active sequences (admitting queued ones into free
  // slots) and returns what each produced; a finished sequence's slot is free again.
  std::vector<SequenceEvent> step();
  void cancel(uint64_t sequence);
  bool idle() const;           // nothing active or queued
  int64_t active() const;
  int64_t queued() const;
  // A running or finished sequence's timings (the last 4096 finished ones are kept); kValue for
  // an unknown id.
  const Timings& timings(uint64_t sequence) const;
  MemoryReport memory() const;  // weights, the KV cache as allocated, the scratch estimate
  int64_t context() const;      // tokens per slot
  int64_t slots() const;
  PrefixCacheStats prefix_cache_stats() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

struct GenerationResult {
  std::string text;
  std::vector<int32_t> prompt_tokens;
  std::vector<int32_t> tokens;  // generated, without a final EOS
  FinishReason finish = FinishReason::kNone;
  Timings timings;
  MemoryReport memory;
};

// Encodes `prompt` (add_special_tokens as Hugging Face's default; invalid UTF-8 is kValue),
// generates on a one-slot engine, and calls on_text with each newly complete piece of text (never
// a partial UTF-8 character). `engine.context` 0 here means prompt + max_tokens (at most the
// model's maximum), so a short generation does not allocate a long cache.
GenerationResult generate(const LoadedModel& model, std::string_view prompt, const GenerateOptions& options,
                          const std::function<void(std::string_view)>& on_text = {},
                          const EngineOptions& engine = {});
// The same from token ids.
GenerationResult generate_ids(const LoadedModel& model, std::vector<int32_t> prompt, const GenerateOptions& options,
                              const std::function<void(std::string_view)>& on_text = {},
                              const EngineOptions& engine = {});

}  // namespace spore::nlp
