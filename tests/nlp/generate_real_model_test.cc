// The engine on the real embedded model (SmolLM2-135M-Instruct, Q4_1 GGUF; skipped, saying so,
// when scripts/fetch-model.sh has not fetched it): several sequences batched into each forward
// pass give exactly the greedy tokens each gives alone, and the stream never shows a U+FFFD on
// Chinese and emoji prompts.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "nlp/embedded_model.h"
#include "spore/nlp/generate.h"

namespace {

using namespace spore::nlp;

using spore::test::have_model;
using spore::test::kModel;

const LoadedModel& model() {
  static const LoadedModel m = load_model(kModel, {.require_tokenizer = true});
  return m;
}

const std::vector<std::string> kPrompts = {"The capital of France is", "深度学习框架在昇腾处理器上", "My favourite emoji are 🦙 and",
                                           "def fibonacci(n):"};

TEST(GenerateRealModel, BatchedEqualsSoloGreedy) {
  if (!have_model()) GTEST_SKIP() << kModel << " is not there (bash scripts/fetch-model.sh)";
  GenerateOptions o;
  o.max_tokens = 8;  // the real model is slow under ASan: enough for prefill pieces and decodes to interleave
  o.sampling.temperature = 0;
  o.ignore_eos = true;
  std::vector<std::vector<int32_t>> solo;
  for (const std::string& p : kPrompts) solo.push_back(generate(model(), p, o).tokens);
  EngineOptions eo;
  eo.slots = 3;  // four prompts over three slots: one waits for a free slot
  eo.context = 64;
  eo.prefill_chunk = 4;  // prompts take several steps next to other sequences' decodes
  Engine e(model(), eo);
  std::vector<uint64_t> ids;
  for (const std::string& p : kPrompts) ids.push_back(e.add(model().tokenizer->encode(p, true), o));
  std::map<uint64_t, std::vector<int32_t>> got;
  std::map<uint64_t, std::string> text;
  while (!e.idle())
    for (const SequenceEvent& ev : e.step()) {
      if (ev.token) got[ev.sequence].push_back(*ev.token);
      // No piece shows a U+FFFD; only the end of a sequence cut inside a character decodes to one,
      // as the full decode does (checked below).
      if (ev.finished == FinishReason::kNone) {
        EXPECT_EQ(ev.text.find("\xEF\xBF\xBD"), std::string::npos) << "piece '" << ev.text << "'";
      }
      text[ev.sequence] += ev.text;
    }
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    EXPECT_EQ(got[ids[i]], solo[i]) << kPrompts[i];
    EXPECT_EQ(text[ids[i]], model().tokenizer->decode(solo[i])) << kPrompts[i];
  }
}

// NOTE [Speculative decoding]: on an input-grounded prompt (the answer copies the given text),
// prompt lookup's drafts are accepted, and the greedy tokens are exactly those without it: the
// K + 1-row verification pass gives every row the logits a one-token step gives.
TEST(GenerateRealModel, SpeculativeGreedyEqualsPlainGreedy) {
  if (!have_model()) GTEST_SKIP() << kModel << " is not there (bash scripts/fetch-model.sh)";
  const std::string text =
      "Spore is a deep-learning system in C++. It loads GGUF files, runs a continuous-batching engine and serves an "
      "OpenAI-compatible API.";
  const std::string prompt = "Copy this text exactly.\nText: " + text + "\nCopy: Spore is a deep-learning";
  GenerateOptions o;
  o.max_tokens = 24;
  o.sampling.temperature = 0;
  o.ignore_eos = true;
  const GenerationResult plain = generate(model(), prompt, o);
  for (auto type : {SpeculativeOptions::Type::kNgram, SpeculativeOptions::Type::kDraft}) {
    o.speculative.type = type;
    o.speculative.draft_max = 6;
    EngineOptions eo;
    // The model drafting for itself (a draft of the same vocabulary, by construction).
    if (type == SpeculativeOptions::Type::kDraft) eo.draft = std::shared_ptr<const LoadedModel>(&model(), [](const LoadedModel*) {});
    const GenerationResult spec = generate(model(), prompt, o, {}, eo);
    EXPECT_EQ(spec.tokens, plain.tokens) << speculative_type_name(type);
    EXPECT_GT(spec.timings.accepted_tokens, 0) << speculative_type_name(type);
  }
}

}  // namespace
