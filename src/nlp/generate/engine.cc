// The generation engine (NOTE [Generation]): slots over one KV cache, a FIFO queue, and a step
// that batches every active sequence's next chunk into one CausalLM::forward call.
#include <algorithm>
#include <chrono>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "nlp/generate/draft_model.h"
#include "nlp/generate/memory_plan.h"
#include "nlp/generate/ngram_draft.h"
#include "nlp/grammar/matcher.h"
#include "nlp/generate/prefix_cache.h"
#include "nlp/generate/sampler.h"
#include "nlp/generate/stop_text.h"
#include "spore/error.h"
#include "spore/nlp/generate.h"

namespace spore::nlp {

namespace {

using Clock = std::chrono::steady_clock;
double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

constexpr size_t kFinishedKept = 4096;

// Sampling options with the model's generation_config.json defaults filled in where the caller
// left the default value.
SamplingOptions with_model_defaults(SamplingOptions s, const GenerationDefaults& g) {
  const SamplingOptions d;
  if (g.temperature && s.temperature == d.temperature) s.temperature = *g.temperature;
  if (g.top_p && s.top_p == d.top_p) s.top_p = *g.top_p;
  if (g.min_p && s.min_p == d.min_p) s.min_p = *g.min_p;
  if (g.repetition_penalty && s.repetition_penalty == d.repetition_penalty) s.repetition_penalty = *g.repetition_penalty;
  if (g.top_k && s.top_k == d.top_k) s.top_k = *g.top_k;
  return s;
}

// NOTE [Exact speculation]: a fully kept draft doubles the next one's length (up to draft_max); a
// rejected one caps it at one more than it kept, but at least kMinDraft. The cap depends only on
// past outcomes, so greedy output and the sampled distribution are unchanged.
int64_t next_draft_cap(int64_t draft_max, int64_t drafted, int64_t accepted) {
  constexpr int64_t kMinDraft = 3;  // a 4-row chunk: one row tile of the products (quant_kernels.inc)
  if (accepted == drafted) return std::min(draft_max, std::max<int64_t>(kMinDraft, 2 * drafted));
  return std::min(draft_max, std::max(kMinDraft, accepted + 1));
}

}  // namespace

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kNone: return "none";
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kError: return "error";
    case FinishReason::kGrammarDeadEnd: return "grammar_dead_end";
  }
  return "?";
}

double Timings::prompt_tokens_per_second() const {
  return prompt_ms > 0 ? (double)(prompt_tokens - cached_prompt_tokens) * 1000.0 / prompt_ms : 0.0;
}

double Timings::acceptance_rate() const {
  return drafted_tokens > 0 ? (double)accepted_tokens / (double)drafted_tokens : 0.0;
}

double Timings::tokens_per_second() const {
  const double decode_ms = total_ms - first_token_ms;
  return generated_tokens > 1 && decode_ms > 0 ? (generated_tokens - 1) * 1000.0 / decode_ms : 0.0;
}

struct Sequence {
  uint64_t id = 0;
  std::vector<int32_t> prompt;
  GenerateOptions options;
  std::vector<int32_t> eos;
  detail::Sampler sampler;
  std::optional<StreamDecoder> stream;
  detail::StopText stop;
  std::optional<detail::GrammarMatcher> grammar;  // NOTE [Grammars]
  int32_t slot = -1;
  int64_t fed = 0;              // tokens written into the slot's cache rows
  int64_t generated = 0;        // tokens sampled so far (EOS included)
  std::vector<int32_t> next;    // the sampled token waiting to be fed (one element)
  // NOTE [Speculative decoding]: the prompt and every sampled token (what prompt lookup searches,
  // what the draft model reads); this step's chunk (next, then the draft); the draft's tokens and,
  // from a draft model, the distributions they were drawn from.
  std::vector<int32_t> history, feed, draft;
  std::vector<std::vector<double>> draft_q;
  std::optional<detail::Sampler> draft_sampler;  // kDraft: the draft model's draws (no penalties)
  int64_t draft_valid = 0;                       // kDraft: rows of the draft model's cache in use
  // The next draft's length at most (NOTE [Exact speculation]): it follows the acceptance, so
  // that a step whose draft keeps failing early does not pay for verifying rows it throws away.
  int64_t draft_cap = std::numeric_limits<int64_t>::max();
  Timings timings;
  Clock::time_point added, started, first;
  std::function<bool()> still_wanted;  // asked at admission (Engine::add)

  Sequence(const SamplingOptions& s, int64_t vocab, std::vector<std::string> stops)
      : sampler(s, vocab), stop(std::move(stops)) {}
};

struct Engine::Impl {
  std::shared_ptr<CausalLM> lm;
  std::optional<Tokenizer> tokenizer;
  GenerationDefaults defaults;
  std::vector<int32_t> model_eos;
  EngineOptions options;
  int64_t context = 0;
  int64_t vocab = 0;
  MemoryReport memory;
  std::unique_ptr<KvCache> cache;
  std::vector<bool> slot_used;
  std::optional<detail::PrefixCache> prefix;  // what each slot's rows hold (NOTE [Prefix cache])
  std::optional<detail::DraftModel> draft;    // EngineOptions::draft (NOTE [Speculative decoding])
  std::shared_ptr<const detail::TokenTrie> trie;  // the vocabulary's bytes, made for the first grammar
  std::deque<std::unique_ptr<Sequence>> queue;
  std::vector<std::unique_ptr<Sequence>> active;  // in admission order: the chunks' order
  std::map<uint64_t, Timings> finished;
  std::deque<uint64_t> finished_order;
  std::vector<SequenceEvent> pending;  // cancellations, reported by the next step()
  uint64_t next_id = 1;

  void retire(std::unique_ptr<Sequence>& s) {
    s->timings.total_ms = ms_between(s->added, Clock::now());
    if (s->slot >= 0) slot_used[(size_t)s->slot] = false;
    finished[s->id] = s->timings;
    finished_order.push_back(s->id);
    if (finished_order.size() > kFinishedKept) {
      finished.erase(finished_order.front());
      finished_order.pop_front();
    }
    s.reset();
  }

  // A drafted token to verify at this row, and the distribution it came from (empty: prompt lookup's
  // point mass).
  struct Proposal {
    int32_t id;
    std::span<const double> q;
  };
  // Handles a sampled token (or verifies `proposal`); returns the event and whether the sequence is done.
  SequenceEvent take(Sequence& s, std::span<const float> row, const Proposal* proposal = nullptr);
  // Fills each decoding sequence's `draft` for this step (NOTE [Speculative decoding]).
  void make_drafts();
};

Engine::Engine(const LoadedModel& model, const EngineOptions& options) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  if (!model.lm) throw Error(ErrorCode::kValue, "engine: the LoadedModel holds no model");
  m.lm = model.lm;
  m.tokenizer = model.tokenizer;
  m.defaults = model.generation;
  const ModelConfig& c = m.lm->config();
  m.model_eos = c.eos_ids;
  if (m.model_eos.empty() && m.tokenizer && m.tokenizer->eos_id()) m.model_eos.push_back(*m.tokenizer->eos_id());
  m.options = options;
  m.vocab = c.vocab_size;
  if (m.vocab <= 0) throw Error(ErrorCode::kValue, "engine: the model's config (" + c.source + ") has no vocabulary size");
  if (options.slots < 1) throw Error(ErrorCode::kValue, "engine: slots is " + std::to_string(options.slots) + "; give at least 1");
  if (options.prefill_chunk < 1)
    throw Error(ErrorCode::kValue, "engine: prefill_chunk is " + std::to_string(options.prefill_chunk) + "; give at least 1");
  const int64_t model_max = c.max_position_embeddings;
  if (options.context < 0) throw Error(ErrorCode::kValue, "engine: context is negative");
  if (options.context == 0) {
    m.context = model_max > 0 ? std::min<int64_t>(model_max, 4096) : 4096;
  } else {
    if (model_max > 0 && options.context > model_max)
      throw Error(ErrorCode::kValue, "engine: a context of " + std::to_string(options.context) +
                                         " tokens is longer than the model's maximum, " + std::to_string(model_max) +
                                         " (max_position_embeddings in " + c.source + "); lower --context");
    m.context = options.context;
  }
  m.memory = detail::plan_memory(*m.lm, options, m.context);
  if (options.draft) {
    // The draft model's weights and KV cache count too (NOTE [Speculative decoding]).
    if (!options.draft->lm) throw Error(ErrorCode::kValue, "engine: the draft LoadedModel holds no model");
    detail::check_same_vocabulary(model, *options.draft);
    const MemoryReport w = options.draft->lm->weight_memory();
    m.memory.weights_mapped += w.weights_mapped;
    m.memory.weights_resident += w.weights_resident;
    m.memory.kv_cache += options.draft->lm->kv_bytes_per_token(options.kv_dtype) * (uint64_t)options.slots * (uint64_t)m.context;
  }
  if (options.max_memory) detail::check_memory(*m.lm, options, m.context, m.memory, *options.max_memory);
  // The cache is made once, here; the model writes it in place (kv_cache_write) at each step.
  m.cache = m.lm->make_cache(options.slots, m.context, options.kv_dtype);
  m.slot_used.assign((size_t)options.slots, false);
  m.prefix.emplace(options.slots);
  if (options.draft) m.draft.emplace(options.draft, options.slots, m.context, options.kv_dtype, options.prefill_chunk);
}

Engine::~Engine() = default;

uint64_t Engine::add(std::vector<int32_t> prompt, const GenerateOptions& options, std::function<bool()> still_wanted) {
  Impl& m = *impl_;
  if (prompt.empty()) throw Error(ErrorCode::kValue, "generate: the prompt is empty; give at least one token");
  if ((int64_t)prompt.size() > m.context)
    throw Error(ErrorCode::kValue, "generate: the prompt has " + std::to_string(prompt.size()) +
                                       " tokens but the context holds " + std::to_string(m.context) +
                                       "; shorten the prompt or raise --context" +
                                       (m.lm->config().max_position_embeddings > 0
                                            ? " (the model allows up to " +
                                                  std::to_string(m.lm->config().max_position_embeddings) + ")"
                                            : std::string()));
  for (size_t i = 0; i < prompt.size(); ++i)
    if (prompt[i] < 0 || prompt[i] >= m.vocab)
      throw Error(ErrorCode::kValue, "generate: prompt token " + std::to_string(i) + " is id " +
                                         std::to_string(prompt[i]) + ", outside the vocabulary of " +
                                         std::to_string(m.vocab));
  if (options.max_tokens < 1)
    throw Error(ErrorCode::kValue, "generate: max_tokens is " + std::to_string(options.max_tokens) + "; give at least 1");
  if (!options.stop.empty() && !m.tokenizer)
    throw Error(ErrorCode::kValue, "generate: stop strings need the model's tokenizer, and this model has none");
  for (int32_t e : options.eos_ids)
    if (e < 0 || e >= m.vocab)
      throw Error(ErrorCode::kValue, "generate: EOS id " + std::to_string(e) + " is outside the vocabulary of " +
                                         std::to_string(m.vocab));
  validate_speculative(options.speculative);
  for (const LoraUse& u : options.lora)
    if (!u.adapter || u.adapter->model != m.lm.get())
      throw Error(ErrorCode::kValue, "generate: a LoRA adapter " +
                                         (u.adapter ? u.adapter->path.string() + " was loaded for another model"
                                                    : std::string("is null")) +
                                         " (load_lora with the engine's model)");
  if (options.speculative.type == SpeculativeOptions::Type::kDraft && !m.draft)
    throw Error(ErrorCode::kValue, "generate: speculative decoding with a draft model needs one; load it with the "
                                   "engine (EngineOptions::draft, --spec-draft-model PATH) or use \"ngram\"");
  SamplingOptions so = options.apply_model_defaults ? with_model_defaults(options.sampling, m.defaults) : options.sampling;
  auto s = std::make_unique<Sequence>(so, m.vocab, options.stop);
  if (options.speculative.type == SpeculativeOptions::Type::kDraft) {
    // Any q is exact under the acceptance rule as long as the draft is drawn from it; the
    // sequence's penalties stay with the model that decides.
    SamplingOptions d = so;
    d.repetition_penalty = 1.0;
    d.presence_penalty = d.frequency_penalty = 0.0;
    d.penalty_last_n = 0;
    d.logprobs = false;
    d.top_logprobs = 0;
    if (d.seed) d.seed = *d.seed ^ 0x9e3779b97f4a7c15ull;  // its own stream, still reproducible
    s->draft_sampler.emplace(d, m.vocab);
  }
  s->id = m.next_id++;
  s->options = options;
  s->options.sampling = so;
  s->eos = options.eos_ids.empty() ? m.model_eos : options.eos_ids;
  if (m.tokenizer) s->stream.emplace(*m.tokenizer);
  if (options.grammar) {
    if (!m.tokenizer)
      throw Error(ErrorCode::kValue, "generate: a grammar needs the model's tokenizer (to know each token's text), "
                                     "and this model has none");
    if (!m.trie) m.trie = std::make_shared<const detail::TokenTrie>(detail::token_bytes(*m.tokenizer), m.vocab);
    s->grammar.emplace(options.grammar, m.trie, options.ignore_eos ? std::vector<int32_t>{} : s->eos);
  }
  for (int32_t t : prompt) s->sampler.accept(t);
  s->history = prompt;
  s->prompt = std::move(prompt);
  s->timings.prompt_tokens = (int64_t)s->prompt.size();
  s->added = Clock::now();
  s->still_wanted = std::move(still_wanted);
  const uint64_t id = s->id;
  m.queue.push_back(std::move(s));
  return id;
}

SequenceEvent Engine::Impl::take(Sequence& s, std::span<const float> row, const Proposal* proposal) {
  SequenceEvent ev;
  ev.sequence = s.id;
  const std::vector<uint64_t>* mask = nullptr;
  // NOTE [Grammars]: a draw without the mask that the grammar allows is kept when that is exactly
  // the masked draw (greedy, or sampling without truncating filters: rejection sampling), so a
  // step inside free text, where most tokens are allowed, costs one token's check, not a mask.
  std::optional<detail::Draw> unmasked;
  if (s.grammar && !proposal && s.sampler.unmasked_draw_is_exact()) {
    detail::Draw d = s.sampler.sample(row);  // its own errors (a NaN logit) are not the grammar's
    try {
      const Clock::time_point check = Clock::now();
      if (s.grammar->allows(d.id)) unmasked = std::move(d);
      s.timings.grammar_ms += ms_between(check, Clock::now());
    } catch (const Error& e) {  // max_stacks, as below
      ev.finished = FinishReason::kGrammarDeadEnd;
      ev.error = e.what();
      return ev;
    }
  }
  if (s.grammar && !unmasked) {
    // NOTE [Grammars]: no allowed token is a dead end; it ends the sequence, never waits.
    try {
      const Clock::time_point t0 = Clock::now();
      mask = &s.grammar->allowed();
      s.timings.grammar_ms += ms_between(t0, Clock::now());
    } catch (const Error& e) {  // the grammar's parse stacks exploded (GrammarLimits::max_stacks)
      ev.finished = FinishReason::kGrammarDeadEnd;
      ev.error = e.what();
      return ev;
    }
    if (std::all_of(mask->begin(), mask->end(), [](uint64_t w) { return w == 0; })) {
      ev.finished = s.grammar->accepting() ? FinishReason::kStop : FinishReason::kGrammarDeadEnd;
      bool matched = false;
      if (s.stream) ev.text = s.stop.push(s.stream->finish(), &matched);
      if (!matched) ev.text += s.stop.flush();
      return ev;
    }
  }
  const detail::Draw d = unmasked ? std::move(*unmasked)
                         : proposal ? s.sampler.verify(row, mask, proposal->id, proposal->q)
                                    : s.sampler.sample(row, mask);
  if (mask && !detail::GrammarMatcher::test(*mask, d.id)) {  // every allowed logit was -inf
    ev.finished = FinishReason::kGrammarDeadEnd;
    return ev;
  }
  s.sampler.accept(d.id);
  s.history.push_back(d.id);
  ++s.generated;
  s.timings.generated_tokens = s.generated;
  if (s.generated == 1) {
    s.first = Clock::now();
    s.timings.prompt_ms = ms_between(s.started, s.first);
    s.timings.first_token_ms = ms_between(s.added, s.first);
  }
  ev.token = d.id;
  ev.logprob = d.logprob;
  ev.top_logprobs = d.top;
  bool matched = false;
  // The end of the text: whatever the stop filter and the stream decoder still hold.
  auto drain = [&] {
    if (s.stream) {
      std::string rest = s.stop.push(s.stream->finish(), &matched);
      ev.text += rest;
    }
    if (!matched) ev.text += s.stop.flush();
  };
  if (!s.options.ignore_eos && std::find(s.eos.begin(), s.eos.end(), d.id) != s.eos.end()) {
    drain();
    ev.eos = true;
    ev.finished = FinishReason::kStop;
    return ev;
  }
  if (s.grammar) {
    const Clock::time_point t0 = Clock::now();
    s.grammar->accept(d.id);
    s.timings.grammar_ms += ms_between(t0, Clock::now());
  }
  if (s.stream) ev.text = s.stop.push(s.stream->push(d.id), &matched);
  if (matched) {
    ev.finished = FinishReason::kStop;
    return ev;
  }
  if (s.grammar && s.grammar->finished()) {  // a complete sentence that nothing can extend
    drain();
    ev.finished = FinishReason::kStop;
    return ev;
  }
  if (s.generated >= s.options.max_tokens || s.fed >= context) {
    drain();
    ev.finished = matched ? FinishReason::kStop : FinishReason::kLength;
    return ev;
  }
  s.next.assign(1, d.id);
  return ev;
}

std::vector<SequenceEvent> Engine::step() {
  Impl& m = *impl_;
  std::vector<SequenceEvent> events = std::move(m.pending);
  m.pending.clear();
  // Admission: queued sequences take free slots in arrival order; each starts after the longest
  // prefix of its prompt some free slot's rows still hold (NOTE [Prefix cache]).
  while (!m.queue.empty()) {
    if (std::find(m.slot_used.begin(), m.slot_used.end(), false) == m.slot_used.end()) break;
    // The one moment a queued sequence's owner is asked whether it still wants it: after the
    // wait, before a slot and a prefill are spent on it (a server's client may have left).
    if (m.queue.front()->still_wanted && !m.queue.front()->still_wanted()) {
      cancel(m.queue.front()->id);
      events.insert(events.end(), std::make_move_iterator(m.pending.begin()), std::make_move_iterator(m.pending.end()));
      m.pending.clear();
      continue;
    }
    const detail::PrefixCache::Choice c = m.prefix->admit(
        m.queue.front()->prompt, m.slot_used, m.options.prefix_cache,
        [&m](int32_t from, int32_t to, int64_t begin, int64_t end) {
          return detail::PrefixCache::copy_rows(*m.cache, from, to, begin, end);
        },
        lora_key(m.queue.front()->options.lora));
    if (c.slot < 0) break;
    Sequence& s = *m.queue.front();
    m.slot_used[(size_t)c.slot] = true;
    s.slot = c.slot;
    s.fed = c.reuse;
    s.draft_valid = 0;  // the draft model's rows of this slot hold someone else's tokens
    s.timings.cached_prompt_tokens = c.reuse;
    s.started = Clock::now();
    m.active.push_back(std::move(m.queue.front()));
    m.queue.pop_front();
  }
  if (m.active.empty()) return events;
  m.make_drafts();
  // One chunk per active sequence: the next prefill piece, or the token sampled last step (and
  // the draft to verify after it, with logits at every position).
  std::vector<SequenceChunk> chunks;
  chunks.reserve(m.active.size());
  for (const auto& s : m.active) {
    SequenceChunk c;
    c.slot = s->slot;
    c.position = s->fed;
    c.lora = s->options.lora;
    const int64_t left = (int64_t)s->prompt.size() - s->fed;
    if (left > 0) {
      // No piece of a longer prompt is a single token (a chunk one short instead), for the
      // reason prefix_cache.cc's reusable() gives.
      int64_t piece = std::min(left, m.options.prefill_chunk);
      if (left - piece == 1 && piece > 1) --piece;
      c.tokens = std::span<const int32_t>(s->prompt.data() + s->fed, (size_t)piece);
    } else {
      s->feed = s->next;
      s->feed.insert(s->feed.end(), s->draft.begin(), s->draft.end());
      c.tokens = std::span<const int32_t>(s->feed);
      c.all_logits = !s->draft.empty();
      c.rows_as_decode = c.all_logits;  // each verified token exactly plain decoding's (NOTE [Exact speculation])
    }
    chunks.push_back(c);
  }
  int64_t rows_wanted = 0;
  for (const SequenceChunk& c : chunks) rows_wanted += c.all_logits ? (int64_t)c.tokens.size() : 1;
  Tensor logits;
  try {
    logits = m.lm->forward(chunks, *m.cache);
  } catch (...) {
    m.prefix->clear();  // rows may be half written: no slot's contents can be trusted now
    throw;
  }
  if (!logits.defined() || logits.dtype() != DType::kFloat32 || logits.ndim() != 2 ||
      logits.size(0) != rows_wanted || logits.size(1) != m.vocab)
    throw Error(ErrorCode::kInternal, "engine: the model's forward returned " +
                                          (logits.defined() ? logits.str() : std::string("nothing")) + " for " +
                                          std::to_string(chunks.size()) + " chunks; expected float32 [" +
                                          std::to_string(rows_wanted) + " rows, vocab " + std::to_string(m.vocab) + "]");
  const Tensor rows = logits.contiguous();
  const float* base = rows.data<float>();
  size_t next_row = 0;
  for (size_t i = 0; i < m.active.size(); ++i) {
    Sequence& s = *m.active[i];
    const size_t first_row = next_row;
    next_row += chunks[i].all_logits ? chunks[i].tokens.size() : 1;
    auto row = [&](size_t r) { return std::span<const float>(base + r * (size_t)m.vocab, (size_t)m.vocab); };
    auto take_safely = [&](size_t r, const Impl::Proposal* p) {
      try {
        return m.take(s, row(r), p);
      } catch (const Error& e) {  // this sequence's logits or text went wrong: it ends, the others go on
        SequenceEvent ev;
        ev.sequence = s.id;
        ev.finished = FinishReason::kError;
        ev.error = e.what();
        return ev;
      }
    };
    if (!chunks[i].all_logits) {
      s.fed += (int64_t)chunks[i].tokens.size();
      m.prefix->wrote(s.slot, chunks[i].tokens);
      if (s.fed < (int64_t)s.prompt.size()) continue;  // a prefill piece that is not the last
      SequenceEvent ev = take_safely(first_row, nullptr);
      const bool done = ev.finished != FinishReason::kNone;
      events.push_back(std::move(ev));
      if (done) m.retire(m.active[i]);
      continue;
    }
    // NOTE [Speculative decoding]: row j holds the logits after the chunk's first j + 1 tokens:
    // the draft's token j is verified there, and the first token that differs (or the token
    // after a fully accepted draft) is the step's last. The rows written for rejected draft
    // tokens are simply written over by the next step, which starts after the accepted ones.
    const int64_t before = s.fed;
    const size_t drafted = s.draft.size();
    size_t accepted = 0;
    bool done = false;
    for (size_t j = 0; j <= drafted; ++j) {
      s.fed = before + 1 + (int64_t)j;
      Impl::Proposal p{0, {}};
      if (j < drafted) p = {s.draft[j], s.draft_q.empty() ? std::span<const double>() : std::span<const double>(s.draft_q[j])};
      SequenceEvent ev = take_safely(first_row + j, j < drafted ? &p : nullptr);
      done = ev.finished != FinishReason::kNone;
      const bool kept = j < drafted && ev.token && *ev.token == s.draft[j];
      events.push_back(std::move(ev));
      if (kept) ++accepted;
      if (done || !kept) break;
    }
    m.prefix->wrote(s.slot, std::span<const int32_t>(s.feed).first(std::min(s.feed.size(), 1 + accepted)));
    s.timings.drafted_tokens += (int64_t)drafted;
    s.draft_cap = next_draft_cap(s.options.speculative.draft_max, (int64_t)drafted, (int64_t)accepted);
    s.timings.accepted_tokens += (int64_t)accepted;
    s.draft_valid = std::min(s.draft_valid, before + 1 + (int64_t)accepted);
    if (done) m.retire(m.active[i]);
  }
  std::erase_if(m.active, [](const std::unique_ptr<Sequence>& s) { return !s; });
  return events;
}

void Engine::Impl::make_drafts() {
  std::vector<detail::DraftModel::Request> wanted;
  for (const auto& sp : active) {
    Sequence& s = *sp;
    s.draft.clear();
    s.draft_q.clear();
    const SpeculativeOptions& o = s.options.speculative;
    if (o.type == SpeculativeOptions::Type::kNone || s.fed < (int64_t)s.prompt.size()) continue;
    // Room: the chunk (next + draft) must fit the context, and no more tokens are drafted than
    // the sequence may still generate after this step's first.
    const int64_t room = std::min({o.draft_max, s.draft_cap, context - s.fed - 1, s.options.max_tokens - s.generated - 1});
    if (room < 1) continue;
    if (o.type == SpeculativeOptions::Type::kNgram) {
      s.draft = detail::ngram_draft(s.history, o.ngram_min, o.ngram_max, room);
    } else {
      detail::DraftModel::Request r;
      r.slot = s.slot;
      r.history = s.history;
      r.max_tokens = room;
      r.sampler = &*s.draft_sampler;
      r.greedy = s.options.sampling.temperature == 0;
      r.valid = &s.draft_valid;
      r.tokens = &s.draft;
      r.q = &s.draft_q;
      wanted.push_back(r);
    }
  }
  if (!wanted.empty()) draft->propose(wanted);
}

void Engine::cancel(uint64_t sequence) {
  Impl& m = *impl_;
  auto cancel_in = [&](auto& list) {
    for (auto it = list.begin(); it != list.end(); ++it) {
      if ((*it)->id != sequence) continue;
      SequenceEvent ev;
      ev.sequence = sequence;
      ev.finished = FinishReason::kCancelled;
      m.pending.push_back(std::move(ev));
      m.retire(*it);  // frees the slot now
      list.erase(it);
      return true;
    }
    return false;
  };
  if (!cancel_in(m.active)) cancel_in(m.queue);
}

bool Engine::idle() const { return impl_->active.empty() && impl_->queue.empty(); }
int64_t Engine::active() const { return (int64_t)impl_->active.size(); }
int64_t Engine::queued() const { return (int64_t)impl_->queue.size(); }
MemoryReport Engine::memory() const { return impl_->memory; }
int64_t Engine::context() const { return impl_->context; }
int64_t Engine::slots() const { return impl_->options.slots; }
PrefixCacheStats Engine::prefix_cache_stats() const {
  PrefixCacheStats s = impl_->prefix->stats();
  for (size_t slot = 0; slot < impl_->slot_used.size(); ++slot)
    if (!impl_->slot_used[slot]) s.held_tokens += impl_->prefix->held((int32_t)slot).size();
  return s;
}

const Timings& Engine::timings(uint64_t sequence) const {
  for (const auto& s : impl_->active)
    if (s->id == sequence) return s->timings;
  for (const auto& s : impl_->queue)
    if (s->id == sequence) return s->timings;
  auto it = impl_->finished.find(sequence);
  if (it == impl_->finished.end())
    throw Error(ErrorCode::kValue, "engine: no sequence " + std::to_string(sequence) +
                                       " (never added, or finished more than " + std::to_string(kFinishedKept) +
                                       " sequences ago)");
  return it->second;
}

}  // namespace spore::nlp
