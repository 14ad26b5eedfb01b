// generate() and generate_ids(): one sequence on a one-slot engine (NOTE [Generation]).
#include <algorithm>
#include <string>

#include "nlp/tokenizer/utf8.h"
#include "spore/error.h"
#include "spore/nlp/generate.h"

namespace spore::nlp {

GenerationResult generate_ids(const LoadedModel& model, std::vector<int32_t> prompt, const GenerateOptions& options,
                              const std::function<void(std::string_view)>& on_text, const EngineOptions& engine) {
  EngineOptions eo = engine;
  eo.slots = 1;
  if (eo.context == 0 && model.lm) {
    // Just the room this generation needs, so a short run does not allocate a 4096-token cache.
    const int64_t need = (int64_t)prompt.size() + std::max<int64_t>(options.max_tokens, 1);
    const int64_t model_max = model.lm->config().max_position_embeddings;
    eo.context = model_max > 0 ? std::min(need, model_max) : need;
  }
  Engine e(model, eo);
  GenerationResult r;
  r.prompt_tokens = prompt;
  const uint64_t id = e.add(std::move(prompt), options);
  r.memory = e.memory();
  while (!e.idle()) {
    for (SequenceEvent& ev : e.step()) {
      if (ev.finished == FinishReason::kError) throw Error(ErrorCode::kValue, "generate: " + ev.error);
      if (ev.token && !ev.eos) r.tokens.push_back(*ev.token);
      if (!ev.text.empty()) {
        r.text += ev.text;
        if (on_text) on_text(ev.text);
      }
      if (ev.finished != FinishReason::kNone) r.finish = ev.finished;
    }
  }
  r.timings = e.timings(id);
  return r;
}

GenerationResult generate(const LoadedModel& model, std::string_view prompt, const GenerateOptions& options,
                          const std::function<void(std::string_view)>& on_text, const EngineOptions& engine) {
  if (!model.tokenizer)
    throw Error(ErrorCode::kValue, "generate: the model at " + model.path.string() +
                                       " carries no tokenizer; give token ids (generate_ids) or a model with one");
  const size_t bad = detail::find_invalid_utf8(prompt);
  if (bad != detail::kValidUtf8)
    throw Error(ErrorCode::kValue, "generate: the prompt is not valid UTF-8 (byte " + std::to_string(bad) +
                                       " of " + std::to_string(prompt.size()) + "); give the prompt as UTF-8 text");
  return generate_ids(model, model.tokenizer->encode(prompt, /*add_special_tokens=*/true), options, on_text, engine);
}

}  // namespace spore::nlp
