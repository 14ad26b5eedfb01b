// The engine over test models whose logits the test computes itself (generate_test_lm.h):
// batched sequences give exactly the tokens each gives alone, every step is one forward call over
// every active sequence, slots are reused, cancel frees a slot at once, stop conditions, streaming
// text without U+FFFD, and typed errors for bad prompts and memory limits.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "nlp/generate_test_lm.h"
#include "spore/error.h"
#include "spore/nlp/generate.h"
#include "test_util.h"

namespace {

using namespace spore;
using namespace spore::nlp;
using spore::test::hash_lm;
using spore::test::hash_logits;
using spore::test::HistoryLM;
using spore::test::loaded;

// Greedy continuation computed here, without the engine.
std::vector<int32_t> reference_greedy(std::vector<int32_t> h, int n, int64_t vocab) {
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    const auto l = hash_logits(h, vocab);
    const int32_t best = (int32_t)(std::max_element(l.begin(), l.end()) - l.begin());
    out.push_back(best);
    h.push_back(best);
  }
  return out;
}

constexpr int64_t kVocab = spore::test::kHashVocab;

GenerateOptions greedy(int64_t n) {
  GenerateOptions o;
  o.max_tokens = n;
  o.sampling.temperature = 0;
  return o;
}

// Runs the engine until idle; tokens per sequence id.
std::map<uint64_t, std::vector<int32_t>> drain(Engine& e, std::map<uint64_t, FinishReason>* finish = nullptr) {
  std::map<uint64_t, std::vector<int32_t>> out;
  for (int guard = 0; !e.idle() && guard < 10000; ++guard)
    for (const SequenceEvent& ev : e.step()) {
      if (ev.token && !ev.eos) out[ev.sequence].push_back(*ev.token);
      if (ev.finished != FinishReason::kNone && finish) (*finish)[ev.sequence] = ev.finished;
    }
  return out;
}

TEST(GenerateEngine, OneSequenceMatchesTheReference) {
  auto lm = hash_lm();
  const LoadedModel m = loaded(lm);
  const std::vector<int32_t> prompt = {5, 17, 3, 42, 8};
  const GenerationResult r = generate_ids(m, prompt, greedy(20));
  EXPECT_EQ(r.tokens, reference_greedy(prompt, 20, kVocab));
  EXPECT_EQ(r.finish, FinishReason::kLength);
  EXPECT_EQ(r.timings.prompt_tokens, 5);
  EXPECT_EQ(r.timings.generated_tokens, 20);
  EXPECT_EQ(lm->caches_made, 1);
  EXPECT_EQ(lm->calls.size(), 20u);  // one prefill step, then 19 decode steps
}

TEST(GenerateEngine, BatchedSequencesGiveExactlyTheirSoloTokens) {
  const std::vector<std::vector<int32_t>> prompts = {
      {1, 2, 3}, {9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9}, {33}, {7, 1, 60, 2, 2, 41, 5}, {12, 13}, {63, 0, 63, 0, 63, 0, 1}};
  const std::vector<int64_t> lengths = {12, 5, 9, 16, 1, 7};
  auto lm = hash_lm();
  EngineOptions eo;
  eo.slots = 3;
  eo.context = 40;
  eo.prefill_chunk = 4;  // long prompts take several steps, next to others' decodes
  Engine e(loaded(lm), eo);
  std::vector<uint64_t> ids;
  for (size_t i = 0; i < prompts.size(); ++i) ids.push_back(e.add(prompts[i], greedy(lengths[i])));
  EXPECT_EQ(e.queued(), 6);
  std::map<uint64_t, FinishReason> finish;
  const auto got = drain(e, &finish);
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(got.at(ids[i]), reference_greedy(prompts[i], (int)lengths[i], kVocab)) << "sequence " << i;
    EXPECT_EQ(finish.at(ids[i]), FinishReason::kLength);
  }
  EXPECT_EQ(lm->caches_made, 1);
  // Every forward call carried one chunk per active sequence (never more than the slots), on
  // distinct slots, prefill pieces of at most 4 tokens and decode chunks of one.
  size_t most = 0;
  for (const auto& call : lm->calls) {
    most = std::max(most, call.size());
    std::set<int32_t> slots;
    for (const auto& c : call) {
      EXPECT_LE(c.tokens, 4);
      slots.insert(c.slot);
    }
    EXPECT_EQ(slots.size(), call.size());
  }
  EXPECT_EQ(most, 3u);
  EXPECT_LT(lm->calls.size(), 40u);  // batched: far fewer calls than the 50 solo steps
  EXPECT_TRUE(e.idle());
}

TEST(GenerateEngine, SeededSamplingDoesNotDependOnBatching) {
  auto lm = hash_lm();
  GenerateOptions o;
  o.max_tokens = 10;
  o.sampling.temperature = 0.9;
  o.sampling.top_k = 20;
  o.sampling.seed = 77;
  const std::vector<int32_t> p1 = {4, 4, 4}, p2 = {8, 1};
  const auto solo1 = generate_ids(loaded(lm), p1, o).tokens;
  const auto solo2 = generate_ids(loaded(lm), p2, o).tokens;
  EngineOptions eo;
  eo.slots = 2;
  eo.context = 32;
  Engine e(loaded(lm), eo);
  const uint64_t a = e.add(p1, o), b = e.add(p2, o);
  const auto got = drain(e);
  EXPECT_EQ(got.at(a), solo1);
  EXPECT_EQ(got.at(b), solo2);
}

TEST(GenerateEngine, CancelFreesTheSlotAtOnce) {
  auto lm = hash_lm();
  EngineOptions eo;
  eo.slots = 1;
  eo.context = 64;
  Engine e(loaded(lm), eo);
  const uint64_t a = e.add({1, 2, 3}, greedy(50));
  const uint64_t b = e.add({4, 5}, greedy(6));
  e.step();
  e.step();
  EXPECT_EQ(e.active(), 1);
  EXPECT_EQ(e.queued(), 1);
  e.cancel(a);
  EXPECT_EQ(e.active(), 0);  // freed now, not at the next step
  const auto events = e.step();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events[0].sequence, a);
  EXPECT_EQ(events[0].finished, FinishReason::kCancelled);
  EXPECT_EQ(lm->calls.back().size(), 1u);
  EXPECT_EQ(lm->calls.back()[0].slot, 0);  // b took the freed slot in the same step
  EXPECT_EQ(lm->calls.back()[0].position, 0);
  std::vector<int32_t> rest;
  for (const auto& ev : events)
    if (ev.sequence == b && ev.token) rest.push_back(*ev.token);
  auto more = drain(e);
  rest.insert(rest.end(), more[b].begin(), more[b].end());
  EXPECT_EQ(rest, reference_greedy({4, 5}, 6, kVocab));  // the slot's old rows do not leak in
  EXPECT_EQ(e.timings(a).generated_tokens, 2);
  e.cancel(a);  // cancelling a finished sequence is a no-op
  const uint64_t c = e.add({6}, greedy(3));
  e.cancel(c);  // a queued one too
  EXPECT_TRUE(e.idle());
}

// A queued sequence whose owner no longer wants it (a server's client that left while it waited,
// issue 25) is ended as cancelled at admission: asked only once a slot is free, and no forward
// pass ever carries its prompt. One that is still wanted takes the slot as before.
TEST(GenerateEngine, StillWantedIsAskedAtAdmission) {
  auto lm = hash_lm();
  EngineOptions eo;
  eo.slots = 1;
  eo.context = 64;
  Engine e(loaded(lm), eo);
  int asked_b = 0, asked_c = 0;
  bool b_wanted = true;
  const uint64_t a = e.add({1, 2, 3}, greedy(3));
  const uint64_t b = e.add({4, 5, 6, 7}, greedy(6), [&] { ++asked_b; return b_wanted; });
  const uint64_t c = e.add({8, 9}, greedy(2), [&] { ++asked_c; return true; });
  e.step();
  EXPECT_EQ(asked_b, 0) << "asked while no slot was free";
  b_wanted = false;  // b's client leaves while a runs
  std::map<uint64_t, FinishReason> finish;
  const auto got = drain(e, &finish);
  EXPECT_EQ(asked_b, 1);
  EXPECT_EQ(finish.at(b), FinishReason::kCancelled);
  EXPECT_EQ(got.count(b), 0u);
  EXPECT_EQ(e.timings(b).generated_tokens, 0);
  EXPECT_EQ(asked_c, 1);
  EXPECT_EQ(finish.at(a), FinishReason::kLength);
  EXPECT_EQ(finish.at(c), FinishReason::kLength);
  EXPECT_EQ(got.at(c), reference_greedy({8, 9}, 2, kVocab));
  // Only a's and c's chunks ever ran: no chunk of b's four-token prompt.
  for (const auto& call : lm->calls)
    for (const auto& chunk : call) EXPECT_NE(chunk.tokens, 4) << "b's prompt was computed";
}

TEST(GenerateEngine, ContextAndMaxTokensEndTheSequence) {
  auto lm = hash_lm();
  EngineOptions eo;
  eo.context = 10;
  Engine e(loaded(lm), eo);
  const uint64_t id = e.add({1, 2, 3, 4}, greedy(100));
  std::map<uint64_t, FinishReason> finish;
  const auto got = drain(e, &finish);
  EXPECT_EQ(finish.at(id), FinishReason::kLength);
  EXPECT_EQ(got.at(id).size(), 7u);  // 6 fed after the prompt fills the 10 rows, the 7th is sampled from them
  EXPECT_EQ(got.at(id), reference_greedy({1, 2, 3, 4}, 7, kVocab));
}

TEST(GenerateEngine, EosEndsTheSequence) {
  auto lm = hash_lm();
  const std::vector<int32_t> prompt = {3, 1, 4, 1, 5};
  const auto ref = reference_greedy(prompt, 12, kVocab);
  GenerateOptions o = greedy(12);
  o.eos_ids = {ref[4]};
  const size_t first = (size_t)(std::find(ref.begin(), ref.end(), ref[4]) - ref.begin());
  const GenerationResult r = generate_ids(loaded(lm), prompt, o);
  EXPECT_EQ(r.finish, FinishReason::kStop);
  EXPECT_EQ(r.tokens, std::vector<int32_t>(ref.begin(), ref.begin() + (ptrdiff_t)first));  // without the EOS
  EXPECT_EQ(r.timings.generated_tokens, (int64_t)first + 1);
  o.ignore_eos = true;
  EXPECT_EQ(generate_ids(loaded(lm), prompt, o).tokens, ref);
  // The model's own EOS ids when none are given.
  lm->mutable_config().eos_ids = {ref[0]};
  EXPECT_TRUE(generate_ids(loaded(lm), prompt, greedy(12)).tokens.empty());
}

TEST(GenerateEngine, BadPromptsAreTypedErrors) {
  auto lm = hash_lm(16);
  EngineOptions eo;
  eo.context = 8;
  Engine e(loaded(lm), eo);
  test::expect_error([&] { e.add({}, greedy(1)); }, ErrorCode::kValue, "prompt is empty");
  test::expect_error([&] { e.add(std::vector<int32_t>(9, 1), greedy(1)); }, ErrorCode::kValue, "9 tokens",
                     "context holds 8", "--context");
  test::expect_error([&] { e.add({1, 64}, greedy(1)); }, ErrorCode::kValue, "prompt token 1", "64");
  test::expect_error([&] { e.add({1}, greedy(0)); }, ErrorCode::kValue, "max_tokens");
  GenerateOptions stops = greedy(3);
  stops.stop = {"x"};
  test::expect_error([&] { e.add({1}, stops); }, ErrorCode::kValue, "tokenizer");
  GenerateOptions bad = greedy(3);
  bad.sampling.top_p = 0;
  test::expect_error([&] { e.add({1}, bad); }, ErrorCode::kValue, "top_p");
  EngineOptions big;
  big.context = 17;
  test::expect_error([&] { Engine(loaded(lm), big); }, ErrorCode::kValue, "maximum, 16");
  // A prompt longer than the context through generate_ids (context from the model: 16).
  test::expect_error([&] { generate_ids(loaded(lm), std::vector<int32_t>(20, 1), greedy(4)); }, ErrorCode::kValue,
                     "20 tokens");
  // Text prompts: invalid UTF-8, and a model without a tokenizer.
  const Tokenizer tok = Tokenizer::from_file(std::string(SPORE_SOURCE_DIR) + "/tests/fixtures/tokenizers/tiny_smollm");
  auto lm2 = std::make_shared<HistoryLM>(tok.vocab_size(), [&](std::span<const int32_t> h) {
    return hash_logits(h, tok.vocab_size());
  });
  test::expect_error([&] { generate(loaded(lm2, tok), "ok \xFF\xFE", greedy(2)); }, ErrorCode::kValue, "UTF-8", "byte 3");
  test::expect_error([&] { generate(loaded(lm2), "hello", greedy(2)); }, ErrorCode::kValue, "no tokenizer");
}

TEST(GenerateEngine, MaxMemoryFailsWithTheFiguresBeforeAllocating) {
  auto lm = hash_lm(100000);
  lm->weights_mapped = 1'000'000;
  EngineOptions eo;
  eo.context = 50000;  // KV: 8 bytes per token -> 400,000 bytes
  eo.max_memory = 1'200'000;
  try {
    Engine e(loaded(lm), eo);
    ADD_FAILURE() << "no error";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), ErrorCode::kValue);
    const std::string msg = err.what();
    for (const char* part : {"1.2 MB", "weights 1.0 MB", "KV cache 400.0 kB", "scratch", "tokens of context fit",
                             "nothing was allocated"})
      EXPECT_NE(msg.find(part), std::string::npos) << part << " missing from: " << msg;
  }
  EXPECT_EQ(lm->caches_made, 0);
  eo.max_memory = 2'000'000;
  Engine ok(loaded(lm), eo);
  EXPECT_EQ(lm->caches_made, 1);
  const MemoryReport r = ok.memory();
  EXPECT_EQ(r.weights_mapped, 1'000'000u);
  EXPECT_EQ(r.kv_cache, 400'000u);
  EXPECT_GT(r.scratch, 0u);
  EXPECT_LE(r.total(), 2'000'000u);
}

// A model that writes a given token script after the prompt (logit 10 on the next one), for the
// text tests: the script is the tokenizer's encoding of a text.
std::shared_ptr<HistoryLM> script_lm(const Tokenizer& tok, size_t prompt_len, std::vector<int32_t> script, int32_t eos) {
  const int64_t vocab = tok.vocab_size();
  return std::make_shared<HistoryLM>(vocab, [=](std::span<const int32_t> h) {
    std::vector<float> l((size_t)vocab, 0.0f);
    const size_t n = h.size() - prompt_len;
    l[(size_t)(n < script.size() ? script[n] : eos)] = 10.0f;
    return l;
  });
}

TEST(GenerateEngine, StreamedTextHasNoReplacementCharacterAndStopsAreCaught) {
  const Tokenizer tok = Tokenizer::from_file(std::string(SPORE_SOURCE_DIR) + "/tests/fixtures/tokenizers/tiny_smollm");
  const std::string fffd = "\xEF\xBF\xBD";
  const int32_t eos = *tok.token_to_id("<|endoftext|>");
  for (const std::string text : {"深度学习框架在昇腾处理器上运行大模型。", "👨‍👩‍👧‍👦 family 🇯🇵 flags 👍🏽 🦙🤗 end",
                                 "Mixed 中文 and English, 한국어 🦙"}) {
    const std::vector<int32_t> script = tok.encode(text);
    const std::vector<int32_t> prompt = tok.encode("Say:", true);
    const LoadedModel m = loaded(script_lm(tok, prompt.size(), script, eos), tok);
    GenerateOptions o = greedy(200);
    o.eos_ids = {eos};
    std::vector<std::string> pieces;
    const GenerationResult r = generate(m, "Say:", o, [&](std::string_view p) { pieces.emplace_back(p); });
    EXPECT_EQ(r.tokens, script);
    EXPECT_EQ(r.text, text);
    EXPECT_EQ(r.finish, FinishReason::kStop);
    std::string joined;
    size_t empty_steps = script.size() - pieces.size();
    for (const auto& p : pieces) {
      EXPECT_EQ(p.find(fffd), std::string::npos) << "piece '" << p << "' of " << text;
      joined += p;
    }
    EXPECT_EQ(joined, text);
    EXPECT_GT(empty_steps, 0u) << "no token ended inside a character: the test shows nothing";
  }
  // A stop string that spans several tokens (and splits a character's bytes).
  const std::string text = "答案是四十二。结束了 and more";
  const std::vector<int32_t> script = tok.encode(text);
  const std::vector<int32_t> prompt = tok.encode("Q", true);
  const LoadedModel m = loaded(script_lm(tok, prompt.size(), script, eos), tok);
  GenerateOptions o = greedy(200);
  o.stop = {"。结束", "never"};
  std::string streamed;
  const GenerationResult r = generate(m, "Q", o, [&](std::string_view p) { streamed += p; });
  EXPECT_EQ(r.text, "答案是四十二");
  EXPECT_EQ(streamed, "答案是四十二");
  EXPECT_EQ(r.finish, FinishReason::kStop);
  EXPECT_LT(r.tokens.size(), script.size());
  // max_tokens cutting a character in half: the end decodes as the full decode does.
  GenerateOptions cut = greedy(2);
  const GenerationResult c = generate(loaded(script_lm(tok, prompt.size(), tok.encode("深"), eos), tok), "Q", cut);
  EXPECT_EQ(c.text, tok.decode(c.tokens));
}

TEST(GenerateEngine, LogprobsReachTheEvents) {
  auto lm = hash_lm();
  Engine e(loaded(lm));
  GenerateOptions o = greedy(2);
  o.sampling.top_logprobs = 3;
  const uint64_t id = e.add({1, 2}, o);
  const auto ev = e.step();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].sequence, id);
  ASSERT_EQ(ev[0].top_logprobs.size(), 3u);
  EXPECT_EQ(ev[0].top_logprobs[0].id, *ev[0].token);  // greedy: the most likely one
  EXPECT_FLOAT_EQ(ev[0].top_logprobs[0].logprob, ev[0].logprob);
  EXPECT_LT(ev[0].logprob, 0.0f);
  EXPECT_GT(e.timings(id).first_token_ms, 0.0);
  test::expect_error([&] { e.timings(999); }, ErrorCode::kValue, "no sequence 999");
}

}  // namespace
