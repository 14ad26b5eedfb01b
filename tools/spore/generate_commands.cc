// spore generate / spore chat: text generation from a causal LM (include/spore/nlp/generate.h).
//   spore generate [--model PATH] --prompt TEXT [--max-tokens N] [--temperature T] [--top-k K]
//                  [--top-p P] [--min-p P] [--seed S] [--stop S]... [--repeat-penalty R]
//                  [--chat] [--max-memory BYTES] [--context N] [--print-ids]
//                  [--grammar-file GBNF | --json-schema-file SCHEMA]  (also for chat: NOTE [Grammars])
//                  [--spec-type ngram|draft] [--spec-draft-n-max K] [--spec-draft-model PATH]
//                  (speculative decoding, also for chat: NOTE [Speculative decoding]; llama.cpp's
//                  flag names, with --speculative, --draft-max and --draft PATH as aliases)
//                  [--lora PATH[:SCALE]]...  (LoRA adapters, GGUF or PEFT, also for chat: NOTE [LoRA adapters])
//       streams the continuation to stdout; a figures line (prompt tokens, prefill and decode
//       tokens/s, first-token ms, memory) goes to stderr. --print-ids prints instead one JSON
//       line {"prompt_ids", "ids", "text", "finish"} (tools/compare_llama_cpp.py reads it).
//   spore chat [--model PATH] [--system TEXT]: an interactive chat on stdin/stdout through the
//       model's chat template; /reset starts over, /exit (or end of input) quits.
// No --model: the embedded default (nlp::default_model_path(), SmolLM2-135M-Instruct).
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>

#include "commands.h"
#include "id_list.h"
#include "spore/context.h"
#include "spore/error.h"
#include "spore/llm.h"
#include "spore/nlp/generate.h"
#include "spore/nlp/lora.h"

namespace spore::cli {

namespace {

// The options both commands share.
struct ModelArgs {
  std::string model;
  bool allow_unverified = false;
  int64_t context = 0;
  uint64_t max_memory = 0;
  int64_t max_tokens = 256;
  double temperature = 0.8, top_p = 1.0, min_p = 0.0, repeat_penalty = 1.0;
  double presence_penalty = 0.0, frequency_penalty = 0.0;
  int64_t top_k = 0, repeat_last_n = 64;
  int threads = 0;
  std::string kv_cache = "f16";
  std::string numerics = "auto";
  bool no_repack = false;  // NOTE [Repacked weights]
  uint64_t seed = 0;
  std::string grammar_file, json_schema_file;  // constrained decoding (NOTE [Grammars])
  std::vector<std::string> lora;                // PATH[:SCALE] each (NOTE [LoRA adapters])
  // NOTE [Speculative decoding]
  std::string spec_type = "none", draft_model;
  int64_t draft_max = nlp::SpeculativeOptions{}.draft_max, ngram_n = nlp::SpeculativeOptions{}.ngram_max;
  CLI::Option* spec_type_opt = nullptr;
  CLI::Option *temperature_opt = nullptr, *top_k_opt = nullptr, *top_p_opt = nullptr, *min_p_opt = nullptr,
              *repeat_opt = nullptr, *seed_opt = nullptr, *max_memory_opt = nullptr;

  void add(CLI::App* cmd, int64_t default_max_tokens) {
    max_tokens = default_max_tokens;
    cmd->add_option("--model", model, "Model directory or .gguf file (default: the embedded SmolLM2-135M-Instruct)");
    cmd->add_flag("--allow-unverified", allow_unverified, "Load even when the files do not match the artifact's lock");
    cmd->add_option("--max-tokens", max_tokens, "Tokens to generate at most")->check(CLI::PositiveNumber)->capture_default_str();
    temperature_opt = cmd->add_option("--temperature", temperature, "0: greedy; else the sampling temperature (default: the model's, else 0.8)")
                          ->check(CLI::NonNegativeNumber);
    top_k_opt = cmd->add_option("--top-k", top_k, "Keep the k most likely tokens (0: off)")->check(CLI::NonNegativeNumber);
    top_p_opt = cmd->add_option("--top-p", top_p, "Keep the most likely tokens up to this mass (1: off)")->check(CLI::Range(0.0, 1.0));
    min_p_opt = cmd->add_option("--min-p", min_p, "Drop tokens below min-p times the top probability (0: off)")->check(CLI::Range(0.0, 1.0));
    repeat_opt = cmd->add_option("--repeat-penalty", repeat_penalty, "Repetition penalty over the last --repeat-last-n tokens (1: off)")
                     ->check(CLI::PositiveNumber);
    cmd->add_option("--repeat-last-n", repeat_last_n, "Tokens the penalties look back over (-1: all)")->capture_default_str();
    cmd->add_option("--presence-penalty", presence_penalty, "OpenAI presence penalty (0: off)");
    cmd->add_option("--frequency-penalty", frequency_penalty, "OpenAI frequency penalty (0: off)");
    seed_opt = cmd->add_option("--seed", seed, "Random seed (the same seed gives the same text)");
    cmd->add_option("--grammar-file", grammar_file, "Generate only text this GBNF grammar (llama.cpp's syntax, start rule root) accepts");
    cmd->add_option("--json-schema-file", json_schema_file, "Generate only JSON this JSON Schema accepts (OpenAI's subset)")
        ->excludes(cmd->get_option("--grammar-file"));
    spec_type_opt = cmd->add_option("--spec-type,--speculative", spec_type,
                                    "Speculative decoding: none, ngram (prompt lookup) or draft (--spec-draft-model)");
    cmd->add_option("--spec-draft-n-max,--draft-max", draft_max, "Tokens drafted per step at most (1 to 64)")
        ->capture_default_str();
    cmd->add_option("--spec-draft-model,--model-draft,--draft", draft_model,
                    "A smaller model of the same vocabulary that drafts (implies --spec-type draft)");
    cmd->add_option("--spec-ngram-size-n", ngram_n, "ngram: the longest suffix looked up in the text so far (1 to 16)")
        ->capture_default_str();
    cmd->add_option("--lora", lora,
                    "A LoRA adapter to apply, PATH or PATH:SCALE (a llama.cpp GGUF adapter or a PEFT directory); "
                    "repeat for several");
    cmd->add_option("--threads", threads, "Threads for the kernels (0: one per core)")->check(CLI::NonNegativeNumber);
    cmd->add_option("--kv-cache", kv_cache, "KV cache dtype: f16, bf16 or f32")
        ->check(CLI::IsMember({"f16", "bf16", "f32"}))
        ->capture_default_str();
    cmd->add_option("--numerics", numerics,
                    "auto (ggml for GGUF, reference for HF directories), reference (float32 as transformers) or "
                    "ggml (rounding as llama.cpp, whose greedy tokens it then matches)")
        ->check(CLI::IsMember({"auto", "reference", "ggml"}))
        ->capture_default_str();
    cmd->add_flag("--no-repack", no_repack, kNoRepackHelp);
    cmd->add_option("--context", context, "Tokens of context to allocate (default: what the run needs, or 4096 for chat)")
        ->check(CLI::NonNegativeNumber);
    max_memory_opt = cmd->add_option("--max-memory", max_memory,
                                     "Refuse, with the figures, a run whose weights + KV cache + scratch exceed these bytes")
                         ->check(CLI::PositiveNumber);
  }

  nlp::LoadedModel load() const {
    speculative();
    set_num_threads(threads);
    nlp::LoadOptions lo;
    lo.allow_unverified = allow_unverified;
    lo.require_tokenizer = true;
    lo.numerics = nlp::parse_numerics(numerics);
    set_repack_at_load(!no_repack);
    const std::filesystem::path path = model.empty() ? nlp::default_model_path() : std::filesystem::path(model);
    nlp::LoadedModel m = nlp::load_model(path, lo);
    if (m.verification_overridden)
      std::fprintf(stderr, "spore: WARNING: %s does not match its lock; loaded because of --allow-unverified\n",
                   path.string().c_str());
    return m;
  }

  // Flags given win, then the model's generation_config.json defaults, then the CLI's own
  // defaults (temperature 0.8, the filters off).
  nlp::GenerateOptions generate_options(const nlp::GenerationDefaults& model) const {
    nlp::GenerateOptions o;
    o.max_tokens = max_tokens;
    o.apply_model_defaults = false;  // resolved here, where we know which flags were given
    nlp::SamplingOptions& s = o.sampling;
    auto pick = [](const CLI::Option* opt, auto given, auto model_value, auto fallback) {
      return opt->count() ? given : model_value ? *model_value : fallback;
    };
    s.temperature = pick(temperature_opt, temperature, model.temperature, 0.8);
    s.top_k = pick(top_k_opt, top_k, model.top_k, int64_t{0});
    s.top_p = pick(top_p_opt, top_p, model.top_p, 1.0);
    s.min_p = pick(min_p_opt, min_p, model.min_p, 0.0);
    s.repetition_penalty = pick(repeat_opt, repeat_penalty, model.repetition_penalty, 1.0);
    s.presence_penalty = presence_penalty;
    s.frequency_penalty = frequency_penalty;
    s.penalty_last_n = repeat_last_n;
    if (seed_opt->count()) s.seed = seed;
    o.grammar = grammar();
    o.speculative = speculative();
    return o;
  }

  // The --spec-* flags resolved and checked; load() checks them first, so that a usage error is
  // reported as one whether or not a model is there.
  nlp::SpeculativeOptions speculative() const {
    nlp::SpeculativeOptions s;
    s.type = nlp::parse_speculative_type(spec_type);
    if (!draft_model.empty() && !spec_type_opt->count()) s.type = nlp::SpeculativeOptions::Type::kDraft;
    s.draft_max = draft_max;
    s.ngram_max = ngram_n;
    nlp::validate_speculative(s);
    if (s.type == nlp::SpeculativeOptions::Type::kDraft && draft_model.empty())
      throw Error(ErrorCode::kValue, "--spec-type draft needs a draft model: give --spec-draft-model PATH (a smaller "
                                     "model of the same vocabulary), or use --spec-type ngram");
    return s;
  }

  // The adapters of --lora, loaded for `m`; one line each to stderr.
  std::vector<nlp::LoraUse> adapters(const nlp::LoadedModel& m) const {
    std::vector<nlp::LoraUse> uses;
    for (const std::string& arg : lora) {
      const auto [path, scale] = nlp::parse_lora_argument(arg);
      uses.push_back({nlp::load_lora(path, m), scale});
      const nlp::LoraAdapter& a = *uses.back().adapter;
      std::fprintf(stderr, "spore: LoRA %s (%s, %lld projections, rank up to %lld) at scale %g\n", path.string().c_str(),
                   a.format.c_str(), (long long)a.pairs, (long long)a.max_rank, scale);
    }
    return uses;
  }

  // The draft model of --spec-draft-model (null without it), loaded as the model is.
  std::shared_ptr<const nlp::LoadedModel> draft() const {
    if (draft_model.empty()) return nullptr;
    nlp::LoadOptions lo;
    lo.allow_unverified = allow_unverified;
    lo.numerics = nlp::parse_numerics(numerics);
    set_repack_at_load(!no_repack);
    return std::make_shared<const nlp::LoadedModel>(nlp::load_model(draft_model, lo));
  }

  // The compiled grammar of --grammar-file or --json-schema-file (null without either); kIO when
  // the file cannot be read, kValue naming the line or keyword when it is not valid.
  std::shared_ptr<const nlp::Grammar> grammar() const {
    if (grammar_file.empty() && json_schema_file.empty()) return nullptr;
    const std::string& path = grammar_file.empty() ? json_schema_file : grammar_file;
    std::ifstream f(path, std::ios::binary);
    if (!f) throw Error(ErrorCode::kIO, "cannot read " + path + " (given to " +
                                            (grammar_file.empty() ? "--json-schema-file" : "--grammar-file") + ")");
    const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    try {
      return nlp::Grammar::from_gbnf(grammar_file.empty() ? nlp::json_schema_to_gbnf(text) : text);
    } catch (const Error& e) {
      throw Error(e.code(), path + ": " + e.what());
    }
  }

  nlp::EngineOptions engine_options(std::shared_ptr<const nlp::LoadedModel> draft = nullptr) const {
    nlp::EngineOptions e;
    e.draft = std::move(draft);
    e.context = context;
    e.kv_dtype = kv_cache == "f32" ? DType::kFloat32 : kv_cache == "bf16" ? DType::kBFloat16 : DType::kFloat16;
    if (max_memory_opt->count()) e.max_memory = max_memory;
    return e;
  }
};

// "; speculative ngram: 40 drafted, 31 accepted (77.5%)" when speculation was on, else "".
std::string speculation_figures(const nlp::Timings& t, nlp::SpeculativeOptions::Type type) {
  if (type == nlp::SpeculativeOptions::Type::kNone) return "";
  char buf[160];
  std::snprintf(buf, sizeof buf, "; speculative %s: %lld drafted, %lld accepted (%.1f%%)", nlp::speculative_type_name(type),
                (long long)t.drafted_tokens, (long long)t.accepted_tokens, 100.0 * t.acceptance_rate());
  return buf;
}

void print_figures(const nlp::Timings& t, const nlp::MemoryReport& m, const std::string& finish,
                   nlp::SpeculativeOptions::Type spec) {
  std::fprintf(stderr,
               "spore: prompt %lld tokens, prefill %.1f tokens/s, first token %.1f ms; decode %lld tokens, %.1f "
               "tokens/s%s%s; memory: weights %s (mapped %s, resident %s), KV cache %s, scratch %s; finish: %s\n",
               (long long)t.prompt_tokens, t.prompt_tokens_per_second(), t.first_token_ms, (long long)t.generated_tokens,
               t.tokens_per_second(), speculation_figures(t, spec).c_str(),
               t.grammar_ms > 0 ? (", grammar " + std::to_string((int64_t)(t.grammar_ms * 1000)) + " us").c_str() : "",
               nlp::format_bytes(m.weights_mapped + m.weights_resident).c_str(),
               nlp::format_bytes(m.weights_mapped).c_str(), nlp::format_bytes(m.weights_resident).c_str(),
               nlp::format_bytes(m.kv_cache).c_str(), nlp::format_bytes(m.scratch).c_str(), finish.c_str());
}

const nlp::ChatTemplate& chat_template_of(const nlp::LoadedModel& m) {
  if (!m.chat_template)
    throw Error(ErrorCode::kFormat, m.path.string() + " carries no chat template (tokenizer_config.json chat_template "
                                                      "or GGUF tokenizer.chat_template); drop --chat or use a chat model");
  return *m.chat_template;
}

// The template's end-of-turn token (its eos_token), which ends an answer even when the artifact's
// EOS id is another one.
std::vector<int32_t> chat_eos(const nlp::LoadedModel& m) {
  std::vector<int32_t> eos = m.lm->config().eos_ids;
  if (eos.empty() && m.tokenizer->eos_id()) eos.push_back(*m.tokenizer->eos_id());
  const auto& special = chat_template_of(m).special_tokens();
  if (auto it = special.find("eos_token"); it != special.end())
    if (auto id = m.tokenizer->token_to_id(it->second); id && std::find(eos.begin(), eos.end(), *id) == eos.end())
      eos.push_back(*id);
  return eos;
}

std::vector<int32_t> render_chat(const nlp::LoadedModel& m, const nlohmann::json& messages) {
  const std::string text = chat_template_of(m).render(messages.dump(), /*add_generation_prompt=*/true);
  return m.tokenizer->encode(text, /*add_special_tokens=*/false);  // the template wrote them
}

int run_generate(const ModelArgs& a, const std::string& prompt, const std::string& prompt_ids, bool has_prompt,
                 bool has_ids, const std::vector<std::string>& stops, bool chat, const std::string& system,
                 bool print_ids, bool ignore_eos) {
  if (has_prompt == has_ids)
    throw Error(ErrorCode::kValue, "spore generate: give --prompt TEXT (or --prompt-ids 1,2,3), one of them");
  const nlp::LoadedModel m = a.load();
  nlp::GenerateOptions o = a.generate_options(m.generation);
  o.lora = a.adapters(m);
  o.stop = stops;
  o.ignore_eos = ignore_eos;
  std::vector<int32_t> ids;
  if (has_ids) {
    ids = parse_id_list(prompt_ids, "--prompt-ids");
  } else if (chat) {
    nlohmann::json messages = nlohmann::json::array();
    if (!system.empty()) messages.push_back({{"role", "system"}, {"content", system}});
    messages.push_back({{"role", "user"}, {"content", prompt}});
    ids = render_chat(m, messages);
    o.eos_ids = chat_eos(m);
  }
  auto stream = [&](std::string_view piece) {
    if (print_ids) return;
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
  };
  const nlp::EngineOptions eo = a.engine_options(a.draft());
  const nlp::GenerationResult r = ids.empty() ? nlp::generate(m, prompt, o, stream, eo) : nlp::generate_ids(m, ids, o, stream, eo);
  if (print_ids) {
    nlohmann::json j = {{"prompt_ids", r.prompt_tokens}, {"ids", r.tokens}, {"text", r.text},
                        {"finish", nlp::finish_reason_name(r.finish)}};
    std::fputs((j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n").c_str(), stdout);
  } else {
    std::fputs("\n", stdout);
  }
  std::fflush(stdout);
  print_figures(r.timings, r.memory, nlp::finish_reason_name(r.finish), o.speculative.type);
  return 0;
}

int run_chat(const ModelArgs& a, const std::string& system) {
  const nlp::LoadedModel m = a.load();
  chat_template_of(m);
  nlp::GenerateOptions o = a.generate_options(m.generation);
  o.lora = a.adapters(m);
  nlp::Engine engine(m, a.engine_options(a.draft()));  // context 0: the engine's min(model maximum, 4096)
  o.eos_ids = chat_eos(m);
  const bool tty = isatty(STDIN_FILENO);
  std::fprintf(stderr, "spore chat: %s, context %lld tokens; /reset starts over, /exit quits\n",
               m.path.filename().string().c_str(), (long long)engine.context());
  nlohmann::json messages = nlohmann::json::array();
  if (!system.empty()) messages.push_back({{"role", "system"}, {"content", system}});
  const size_t keep = messages.size();
  std::string line;
  while (true) {
    if (tty) std::fputs("> ", stdout), std::fflush(stdout);
    if (!std::getline(std::cin, line)) break;
    if (line == "/exit" || line == "/quit") break;
    if (line == "/reset") {
      messages.erase(messages.begin() + (ptrdiff_t)keep, messages.end());
      std::fputs("(conversation reset)\n", stderr);
      continue;
    }
    if (line.empty()) continue;
    messages.push_back({{"role", "user"}, {"content", line}});
    // Oldest turns go first when the conversation no longer leaves room for an answer.
    std::vector<int32_t> ids = render_chat(m, messages);
    while ((int64_t)ids.size() + std::min<int64_t>(o.max_tokens, 64) > engine.context() && messages.size() > keep + 1) {
      messages.erase(messages.begin() + (ptrdiff_t)keep);
      ids = render_chat(m, messages);
    }
    if ((int64_t)ids.size() >= engine.context()) {
      std::fprintf(stderr, "spore chat: that message takes %zu tokens, more than the context of %lld; say less\n",
                   ids.size(), (long long)engine.context());
      messages.erase(messages.end() - 1);
      continue;
    }
    const uint64_t id = engine.add(ids, o);
    std::string answer;
    nlp::FinishReason finish = nlp::FinishReason::kNone;
    while (finish == nlp::FinishReason::kNone) {
      for (const nlp::SequenceEvent& ev : engine.step()) {
        if (!ev.text.empty()) {
          answer += ev.text;
          std::fwrite(ev.text.data(), 1, ev.text.size(), stdout);
          std::fflush(stdout);
        }
        if (ev.finished == nlp::FinishReason::kError) throw Error(ErrorCode::kValue, "spore chat: " + ev.error);
        if (ev.finished != nlp::FinishReason::kNone) finish = ev.finished;
      }
    }
    std::fputs("\n", stdout);
    std::fflush(stdout);
    const nlp::Timings& t = engine.timings(id);
    // The engine keeps the conversation's rows in its slot between turns (NOTE [Prefix cache]):
    // only the new turn's tokens run through the model, the rest are "cached".
    std::fprintf(stderr, "[%lld tokens, %.1f tokens/s, first token %.0f ms, prompt %lld tokens, %lld cached%s]\n",
                 (long long)t.generated_tokens, t.tokens_per_second(), t.first_token_ms, (long long)t.prompt_tokens,
                 (long long)t.cached_prompt_tokens, speculation_figures(t, o.speculative.type).c_str());
    messages.push_back({{"role", "assistant"}, {"content", answer}});
  }
  return 0;
}

}  // namespace

void add_generate_commands(CLI::App& app, Handlers& h) {
  auto* gen = add_command(app, "generate", "Generate text from a language model (streams the continuation)",
                          "spore generate --prompt 'The capital of France is' --max-tokens 32 --temperature 0");
  auto args = std::make_shared<ModelArgs>();
  args->add(gen, 256);
  auto prompt = std::make_shared<std::string>();
  auto prompt_ids = std::make_shared<std::string>();
  auto system = std::make_shared<std::string>();
  auto stops = std::make_shared<std::vector<std::string>>();
  auto chat = std::make_shared<bool>(false);
  auto print_ids = std::make_shared<bool>(false);
  auto ignore_eos = std::make_shared<bool>(false);
  auto* prompt_opt = gen->add_option("--prompt", *prompt, "The prompt text");
  auto* ids_opt = gen->add_option("--prompt-ids", *prompt_ids, "The prompt as token ids, 1,2,3 (instead of --prompt)");
  gen->add_option("--stop", *stops, "Stop before this text (repeatable: --stop A --stop B)")->allow_extra_args(false);
  gen->add_flag("--chat", *chat, "Wrap the prompt in the model's chat template as one user message");
  gen->add_option("--system", *system, "With --chat: a system message before the prompt");
  gen->add_flag("--print-ids", *print_ids, "Print one JSON line: prompt_ids, ids, text, finish (no streaming)");
  gen->add_flag("--ignore-eos", *ignore_eos, "Go on past the model's end-of-sequence token (comparisons)");
  gen->callback([&h, args, prompt, prompt_ids, system, stops, chat, print_ids, ignore_eos, prompt_opt, ids_opt] {
    const bool has_prompt = prompt_opt->count() > 0, has_ids = ids_opt->count() > 0;
    h.action = [=] {
      return run_generate(*args, *prompt, *prompt_ids, has_prompt, has_ids, *stops, *chat, *system, *print_ids,
                          *ignore_eos);
    };
  });

  auto* chat_cmd = add_command(app, "chat", "Chat with a language model in the terminal (its chat template, streamed)",
                               "spore chat --system 'You are a concise assistant.'");
  auto cargs = std::make_shared<ModelArgs>();
  cargs->add(chat_cmd, 512);
  auto csystem = std::make_shared<std::string>();
  chat_cmd->add_option("--system", *csystem, "A system message that starts the conversation");
  chat_cmd->callback([&h, cargs, csystem] { h.action = [=] { return run_chat(*cargs, *csystem); }; });
}

}  // namespace spore::cli
