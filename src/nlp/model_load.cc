// load_model: a Hugging Face directory or a GGUF file -> config, weights in place, tokenizer,
// chat template, generation defaults, lock verification (NOTE [LLM engine]).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "nlp/model_internal.h"
#include "nlp/models/family.h"
#include "spore/error.h"
#include "spore/gguf.h"
#include "spore/nlp/embed.h"
#include "spore/nlp/model.h"

#ifndef SPORE_SOURCE_DIR
#define SPORE_SOURCE_DIR "."
#endif

namespace spore::nlp {

namespace {

namespace fs = std::filesystem;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The .gguf files directly in `dir`.
std::vector<fs::path> gguf_files(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (ends_with(e.path().filename().string(), ".gguf")) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

GenerationDefaults read_generation_defaults(const fs::path& file) {
  GenerationDefaults d;
  std::ifstream in(file, std::ios::binary);
  if (!in) return d;
  std::stringstream ss;
  ss << in.rdbuf();
  const auto j = parse_json_text(ss.str(), file.string());
  if (!j.is_object()) throw Error(ErrorCode::kFormat, file.string() + ": must be a JSON object");
  auto num = [&](const char* k) -> std::optional<double> {
    auto it = j.find(k);
    if (it == j.end() || it->is_null()) return std::nullopt;
    if (!it->is_number()) throw Error(ErrorCode::kFormat, file.string() + ": field \"" + k + "\" must be a number");
    return it->get<double>();
  };
  // do_sample false means greedy in transformers; its temperature is then not used.
  auto sample = j.find("do_sample");
  const bool greedy = sample != j.end() && sample->is_boolean() && !sample->get<bool>();
  d.temperature = greedy ? std::optional<double>(0.0) : num("temperature");
  d.top_p = num("top_p");
  d.min_p = num("min_p");
  d.repetition_penalty = num("repetition_penalty");
  if (auto k = num("top_k")) d.top_k = static_cast<int64_t>(*k);
  return d;
}

void verify(LoadedModel& m, const fs::path& artifact_dir, const LoadOptions& o) {
  fs::path lock;
  try {
    lock = find_artifact_lock(artifact_dir);
  } catch (const Error&) {
    return;  // no lock: nothing pins this artifact
  }
  m.verification = verify_artifact(lock);
  if (!m.verification->ok()) {
    if (!o.allow_unverified) require_verified(*m.verification);  // kFormat listing the mismatches
    m.verification_overridden = true;
  }
}

}  // namespace

LoadOptions::Numerics parse_numerics(const std::string& name) {
  if (name == "auto") return LoadOptions::Numerics::kAuto;
  if (name == "reference") return LoadOptions::Numerics::kReference;
  if (name == "ggml") return LoadOptions::Numerics::kGgml;
  throw Error(ErrorCode::kValue, "numerics '" + name + "' is not one of auto, reference, ggml");
}

LoadedModel load_model(const fs::path& path, const LoadOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw Error(ErrorCode::kIO, path.string() + ": no such model file or directory (name a Hugging Face model "
                                                "directory or a .gguf file; `bash scripts/fetch-model.sh` fetches the default)");
  if (is_encoder_model(path))  // NOTE [Embeddings]
    throw Error(ErrorCode::kUnsupported, path.string() + " is an encoder (embedding) model, which does not generate text; "
                                                         "use `spore embed`, or `spore serve` for /v1/embeddings");
  LoadedModel m;
  m.path = path;
  fs::path gguf_path;
  if (fs::is_directory(path, ec)) {
    if (!fs::exists(path / "config.json", ec)) {
      const auto g = gguf_files(path);
      if (g.size() != 1)
        throw Error(ErrorCode::kFormat, path.string() + ": holds no config.json and " + std::to_string(g.size()) +
                                            " .gguf files; a model directory needs config.json + safetensors, or "
                                            "exactly one .gguf (or name the .gguf file)");
      gguf_path = g[0];
    }
  } else {
    gguf_path = path;
  }
  if (!gguf_path.empty()) {
    verify(m, fs::is_directory(path, ec) ? path : gguf_path.parent_path(), options);
    auto g = std::make_shared<const GgufFile>(gguf_path);
    const ModelConfig cfg = ModelConfig::from_gguf(*g);
    m.format = "gguf";
    // auto: llama.cpp's arithmetic, unless the family's blocks have no ggml kernel (windows, soft-caps).
    const bool ggml = options.numerics == LoadOptions::Numerics::kGgml ||
                      (options.numerics == LoadOptions::Numerics::kAuto && models::ggml_numerics_cover(cfg));
    auto ws = open_gguf_weights(g, ggml);
    m.numerics = ggml ? "ggml" : "reference";
    m.lm = make_decoder_lm(cfg, *ws, /*gguf_layout=*/true, ggml);
    if (g->contains("tokenizer.ggml.model")) m.tokenizer = Tokenizer::from_gguf(*g);
    if (g->contains("tokenizer.chat_template")) m.chat_template = ChatTemplate::load_gguf(gguf_path);
  } else {
    verify(m, path, options);
    const ModelConfig cfg = ModelConfig::from_hf_json(path / "config.json");
    auto ws = open_safetensors_weights(path);
    m.format = "safetensors";
    const bool ggml = options.numerics == LoadOptions::Numerics::kGgml;
    m.numerics = ggml ? "ggml" : "reference";
    m.lm = make_decoder_lm(cfg, *ws, /*gguf_layout=*/false, ggml);
    if (fs::exists(path / "tokenizer.json", ec)) m.tokenizer = Tokenizer::from_file(path / "tokenizer.json");
    if (fs::exists(path / "chat_template.jinja", ec) || fs::exists(path / "tokenizer_config.json", ec)) {
      try {
        m.chat_template = ChatTemplate::load(path);
      } catch (const Error& e) {
        // A tokenizer_config.json without a chat_template is common (base models); anything
        // else wrong with a template is the user's to see.
        if (fs::exists(path / "chat_template.jinja", ec) || std::string(e.what()).find("has no \"chat_template\"") == std::string::npos)
          throw;
      }
    }
    m.generation = read_generation_defaults(path / "generation_config.json");
  }
  if (options.require_tokenizer && !m.tokenizer)
    throw Error(ErrorCode::kFormat, path.string() + ": the model carries no tokenizer (tokenizer.json or GGUF "
                                                    "tokenizer.ggml.*), which generation needs");
  m.load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return m;
}

fs::path default_model_path() {
  if (const char* env = std::getenv("SPORE_MODEL"); env && *env) {
    std::error_code ec;
    if (!fs::exists(env, ec))
      throw Error(ErrorCode::kIO, std::string("$SPORE_MODEL names ") + env + ", which does not exist (unset it, or run "
                                                                            "`bash scripts/fetch-model.sh`)");
    return env;
  }
  const fs::path dir = fs::path(SPORE_SOURCE_DIR) / "models" / "smollm2-135m-instruct";
  std::error_code ec;
  if (!fs::exists(dir, ec))
    throw Error(ErrorCode::kIO, "the default model is not at " + dir.string() +
                                    "; fetch it with `bash scripts/fetch-model.sh` (or set $SPORE_MODEL / pass --model)");
  return dir;
}

}  // namespace spore::nlp
