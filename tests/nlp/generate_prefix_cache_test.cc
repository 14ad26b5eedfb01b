// Prefix caching (NOTE [Prefix cache]): a sequence whose prompt shares a prefix with the tokens a
// free slot's rows still hold starts after that prefix. Over HistoryLM (its logits are a function
// of the history it reads back from the cache rows, so a reused row holding the wrong token changes
// the tokens) and over the llama fixture model (real kernels: the raw distribution's logprobs must
// be bitwise those of a run without the cache where the same chunks run).
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "nlp/generate_test_lm.h"
#include "nlp/model_test_util.h"
#include "spore/nlp/generate.h"

namespace {

using namespace spore;
using namespace spore::nlp;
using spore::test::hash_lm;
using spore::test::HistoryLM;
using spore::test::loaded;

GenerateOptions greedy(int64_t n) {
  GenerateOptions o;
  o.max_tokens = n;
  o.sampling.temperature = 0;
  o.ignore_eos = true;
  return o;
}

struct Outcome {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;  // sampled token's, then each top-20 alternative's, per step
  Timings timings;
};

Outcome run_one(Engine& e, const std::vector<int32_t>& prompt, GenerateOptions o) {
  o.sampling.logprobs = true;
  o.sampling.top_logprobs = 20;
  const uint64_t id = e.add(prompt, o);
  Outcome r;
  for (int guard = 0; !e.idle() && guard < 10000; ++guard)
    for (const SequenceEvent& ev : e.step()) {
      EXPECT_EQ(ev.sequence, id);
      EXPECT_NE(ev.finished, FinishReason::kError) << ev.error;
      if (!ev.token) continue;
      r.tokens.push_back(*ev.token);
      r.logprobs.push_back(ev.logprob);
      for (const TokenLogprob& t : ev.top_logprobs) r.logprobs.push_back(t.logprob);
    }
  r.timings = e.timings(id);
  return r;
}

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(PrefixCache, ReusedRowsGiveTheSameTokensAndAreCounted) {
  auto lm = hash_lm();
  EngineOptions eo;
  eo.context = 64;
  Engine e(loaded(lm), eo);
  const std::vector<int32_t> system = {5, 17, 3, 42, 8, 11, 60, 2, 9, 31};
  const Outcome first = run_one(e, concat(system, {20, 21}), greedy(6));
  EXPECT_EQ(first.timings.cached_prompt_tokens, 0);
  // Same system prompt, another question: the 10 system rows are reused.
  lm->calls.clear();
  const Outcome second = run_one(e, concat(system, {22, 23, 24}), greedy(6));
  EXPECT_EQ(second.timings.cached_prompt_tokens, 10);
  ASSERT_FALSE(lm->calls.empty());
  EXPECT_EQ(lm->calls[0][0].position, 10);  // the first forward starts after the reused rows
  EXPECT_EQ(lm->calls[0][0].tokens, 3);
  Engine fresh(loaded(hash_lm()), eo);
  EXPECT_EQ(second.tokens, run_one(fresh, concat(system, {22, 23, 24}), greedy(6)).tokens);
  // The previous conversation continued (prompt + answer + more): the held rows are reused,
  // generated tokens included, up to the last two prompt tokens (never a one-token piece).
  std::vector<int32_t> cont = concat(system, {22, 23, 24});
  cont.insert(cont.end(), second.tokens.begin(), second.tokens.end() - 1);  // the last one was never fed
  cont.push_back(7);
  const Outcome third = run_one(e, cont, greedy(4));
  EXPECT_EQ(third.timings.cached_prompt_tokens, (int64_t)cont.size() - 2);
  Engine fresh2(loaded(hash_lm()), eo);
  EXPECT_EQ(third.tokens, run_one(fresh2, cont, greedy(4)).tokens);
  // The very same prompt again: all but its last two tokens reused (the last runs for the logits).
  const Outcome again = run_one(e, cont, greedy(4));
  EXPECT_EQ(again.timings.cached_prompt_tokens, (int64_t)cont.size() - 2);
  EXPECT_EQ(again.tokens, third.tokens);
  const PrefixCacheStats s = e.prefix_cache_stats();
  EXPECT_EQ(s.lookups, 4u);
  EXPECT_EQ(s.hits, 3u);
  EXPECT_EQ(s.reused_tokens, (uint64_t)(10 + 2 * (cont.size() - 2)));
  EXPECT_EQ(s.held_tokens, cont.size() + 3);  // the last run's prompt and 3 of its 4 tokens (the 4th never fed)
}

TEST(PrefixCache, APromptThatDivergesMidWayReusesOnlyTheCommonPart) {
  auto lm = hash_lm();
  EngineOptions eo;
  eo.context = 64;
  eo.prefill_chunk = 4;  // the prompt's prefill spans several steps both times
  Engine e(loaded(lm), eo);
  const std::vector<int32_t> a = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
  std::vector<int32_t> b = a;
  b[9] = 50;  // differs from the tenth token on
  run_one(e, a, greedy(3));
  const Outcome rb = run_one(e, b, greedy(8));
  EXPECT_EQ(rb.timings.cached_prompt_tokens, 9);
  Engine fresh(loaded(hash_lm()), eo);
  EXPECT_EQ(rb.tokens, run_one(fresh, b, greedy(8)).tokens);
}

TEST(PrefixCache, EvictsTheLeastRecentlyUsedSlotUnderPressure) {
  auto lm = hash_lm();
  EngineOptions eo;
  eo.slots = 2;
  eo.context = 32;
  Engine e(loaded(lm), eo);
  const std::vector<int32_t> a = {1, 2, 3, 4, 5, 6}, b = {7, 8, 9, 10, 11, 12}, c = {13, 14, 15, 16, 17, 18};
  // Each run's tokens must be those of a fresh engine (HistoryLM reads the reused rows back).
  auto check = [&](const std::vector<int32_t>& prompt) {
    const Outcome got = run_one(e, prompt, greedy(3));
    Engine fresh(loaded(hash_lm()), eo);
    EXPECT_EQ(got.tokens, run_one(fresh, prompt, greedy(3)).tokens);
    return got.timings.cached_prompt_tokens;
  };
  EXPECT_EQ(check(a), 0);  // slot 0 holds a
  EXPECT_EQ(check(b), 0);  // slot 1 (never used) holds b
  EXPECT_EQ(check(concat(a, {40, 43})), 6);
  // Both slots hold tokens; c matches neither and takes the least recently used one (b's).
  EXPECT_EQ(check(c), 0);
  EXPECT_EQ(e.prefix_cache_stats().evictions, 1u);
  EXPECT_EQ(check(concat(b, {41})), 0);  // b was evicted
  EXPECT_EQ(check(concat(c, {42, 44})), 6);  // c is still held
}

TEST(PrefixCache, TwoPromptsAdmittedTogetherEachComputeTheirRows) {
  // Two sequences with the same prompt at once: nothing is held yet, so neither reuses rows, and
  // the second never shares the first's slot.
  auto lm = hash_lm();
  EngineOptions eo;
  eo.slots = 2;
  eo.context = 32;
  Engine e(loaded(lm), eo);
  const std::vector<int32_t> p = {3, 1, 4, 1, 5, 9, 2, 6};
  const uint64_t x = e.add(p, greedy(5)), y = e.add(p, greedy(5));
  std::map<uint64_t, std::vector<int32_t>> got;
  while (!e.idle())
    for (const SequenceEvent& ev : e.step())
      if (ev.token) got[ev.sequence].push_back(*ev.token);
  EXPECT_EQ(got[x], got[y]);
  EXPECT_EQ(e.timings(y).cached_prompt_tokens, 0);
  EXPECT_NE(lm->calls[0][0].slot, lm->calls[0][1].slot);
}

// A prompt arriving while another sequence with the same system prompt still generates: the rows
// are copied once from the running slot; both sequences give a fresh engine's tokens.
TEST(PrefixCache, RowsOfARunningSlotAreCopiedOnce) {
  auto lm = hash_lm();
  EngineOptions eo;
  eo.slots = 2;
  eo.context = 64;
  eo.prefill_chunk = 4;
  Engine e(loaded(lm), eo);
  const std::vector<int32_t> system = {5, 17, 3, 42, 8, 11, 60, 2, 9, 31};
  const std::vector<int32_t> pa = concat(system, {20}), pb = concat(system, {22, 23});
  const uint64_t a = e.add(pa, greedy(20));
  std::map<uint64_t, std::vector<int32_t>> got;
  auto collect = [&](const std::vector<SequenceEvent>& evs) {
    for (const SequenceEvent& ev : evs)
      if (ev.token) got[ev.sequence].push_back(*ev.token);
  };
  for (int i = 0; i < 4; ++i) collect(e.step());  // a's prefill (3 steps) and its first decode
  const uint64_t b = e.add(pb, greedy(8));
  while (!e.idle()) collect(e.step());
  EXPECT_EQ(e.timings(b).cached_prompt_tokens, 10);
  EXPECT_EQ(e.prefix_cache_stats().copies, 1u);
  Engine fresh(loaded(hash_lm()), eo);
  EXPECT_EQ(got[a], run_one(fresh, pa, greedy(20)).tokens);
  EXPECT_EQ(got[b], run_one(fresh, pb, greedy(8)).tokens);
}

TEST(PrefixCache, SwitchedOffNothingIsReused) {
  auto lm = hash_lm();
  EngineOptions eo;
  eo.context = 32;
  eo.prefix_cache = false;
  Engine e(loaded(lm), eo);
  const std::vector<int32_t> p = {3, 1, 4, 1, 5, 9, 2, 6};
  run_one(e, p, greedy(3));
  EXPECT_EQ(run_one(e, p, greedy(3)).timings.cached_prompt_tokens, 0);
  EXPECT_EQ(e.prefix_cache_stats().lookups, 0u);
}

// Real kernels (the llama fixture, float32 cache): with the cache, the second prompt's rows
// 0..9 come from the first request and rows 10.. run as one chunk; without it, prefill_chunk 10
// runs the same two chunks, so every logprob must be bitwise equal. Against a single-chunk run
// (other matrix shapes) the logprobs agree to 1e-4.
TEST(PrefixCache, LogitsOnTheFixtureModelAreBitwiseThoseOfARunWithoutTheCache) {
  const LoadedModel m = load_model(spore::test::llm::fixture_model("llama", /*gguf=*/true));
  const std::vector<int32_t> system = {1, 45, 12, 88, 3, 19, 27, 101, 64, 9};
  const std::vector<int32_t> prompt = concat(system, {33, 70, 5, 41});
  EngineOptions eo;
  eo.context = 48;
  eo.kv_dtype = DType::kFloat32;
  Engine cached(m, eo);
  run_one(cached, system, greedy(4));
  const Outcome hit = run_one(cached, prompt, greedy(12));
  ASSERT_EQ(hit.timings.cached_prompt_tokens, 10);

  EngineOptions same = eo;
  same.prefix_cache = false;
  same.prefill_chunk = 10;
  Engine two_chunks(m, same);
  const Outcome ref = run_one(two_chunks, prompt, greedy(12));
  EXPECT_EQ(ref.timings.cached_prompt_tokens, 0);
  EXPECT_EQ(hit.tokens, ref.tokens);
  ASSERT_EQ(hit.logprobs.size(), ref.logprobs.size());
  for (size_t i = 0; i < ref.logprobs.size(); ++i) ASSERT_EQ(hit.logprobs[i], ref.logprobs[i]) << "logprob " << i;

  same.prefill_chunk = 512;
  Engine one_chunk(m, same);
  const Outcome whole = run_one(one_chunk, prompt, greedy(12));
  EXPECT_EQ(hit.tokens, whole.tokens);
  ASSERT_EQ(hit.logprobs.size(), whole.logprobs.size());
  for (size_t i = 0; i < whole.logprobs.size(); ++i) EXPECT_NEAR(hit.logprobs[i], whole.logprobs[i], 1e-4) << i;

  // Rows copied from a slot still generating (float16 cache, the server's default): the copy is
  // of bits, the chunks then run batched with the other sequence's decodes, so against the
  // single-chunk run the logprobs agree to the float16 cache's rounding and the tokens are equal.
  EngineOptions two = eo;
  two.slots = 2;
  two.kv_dtype = DType::kFloat16;
  Engine shared(m, two);
  GenerateOptions lo = greedy(16);
  lo.sampling.logprobs = true;
  const uint64_t running = shared.add(concat(system, {7}), lo);
  shared.step();
  shared.step();
  const uint64_t later = shared.add(prompt, [] {
    GenerateOptions o = greedy(12);
    o.sampling.logprobs = true;
    o.sampling.top_logprobs = 20;
    return o;
  }());
  Outcome copied;
  while (!shared.idle())
    for (const SequenceEvent& ev : shared.step()) {
      if (ev.sequence != later || !ev.token) continue;
      copied.tokens.push_back(*ev.token);
      copied.logprobs.push_back(ev.logprob);
      for (const TokenLogprob& t : ev.top_logprobs) copied.logprobs.push_back(t.logprob);
    }
  EXPECT_EQ(shared.timings(later).cached_prompt_tokens, 10);
  EXPECT_EQ(shared.prefix_cache_stats().copies, 1u);
  (void)running;
  EngineOptions half = same;
  half.kv_dtype = DType::kFloat16;
  Engine one_half(m, half);
  const Outcome ref16 = run_one(one_half, prompt, greedy(12));
  EXPECT_EQ(copied.tokens, ref16.tokens);
  ASSERT_EQ(copied.logprobs.size(), ref16.logprobs.size());
  for (size_t i = 0; i < ref16.logprobs.size(); ++i) EXPECT_NEAR(copied.logprobs[i], ref16.logprobs[i], 1e-3) << i;
}

}  // namespace
