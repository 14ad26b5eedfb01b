// spore embed --model PATH (--text T ... | --file F) [--pooling mean|cls|last] [--query Q]:
// sentence vectors (L2-normalised) as one JSON object on stdout, or with --query a cross-encoder's
// score of each text for the query (NOTE [Embeddings]).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "spore/context.h"
#include "spore/error.h"
#include "spore/nlp/embed.h"

namespace spore::cli {

namespace {

struct EmbedArgs {
  std::string model, file, pooling, query;
  std::vector<std::string> texts;
  int threads = 0;
  bool allow_unverified = false;
};

// One text per line; empty lines are skipped (a trailing newline adds no input).
std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(ErrorCode::kIO, "embed: cannot read --file '" + path + "': " +
                                    (std::filesystem::exists(path) ? "permission denied or not a file" : "no such file"));
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

int run_embed(const EmbedArgs& a) {
  std::vector<std::string> texts = a.texts;
  if (!a.file.empty()) {
    const auto lines = read_lines(a.file);
    texts.insert(texts.end(), lines.begin(), lines.end());
  }
  if (texts.empty()) throw Error(ErrorCode::kValue, "embed: no input; give --text (repeatable) or --file with one text per line");
  set_num_threads(a.threads);
  nlp::EmbeddingLoadOptions o;
  o.allow_unverified = a.allow_unverified;
  if (!a.pooling.empty()) o.pooling = nlp::parse_pooling(a.pooling);
  const nlp::EmbeddingModel m = nlp::load_embedding_model(a.model, o);
  nlohmann::json out = {{"model", m.path().string()},
                        {"family", m.family()},
                        {"format", m.format()}};
  if (!a.query.empty()) {
    int64_t tokens = 0;
    const std::vector<float> scores = m.rerank(a.query, texts, &tokens);
    nlohmann::json results = nlohmann::json::array();
    for (size_t i = 0; i < scores.size(); ++i) results.push_back({{"index", i}, {"relevance_score", scores[i]}});
    out["query"] = a.query;
    out["results"] = results;
    out["tokens"] = tokens;
  } else {
    std::vector<std::vector<int32_t>> ids;
    int64_t tokens = 0;
    for (const auto& t : texts) {
      ids.push_back(m.tokenize(t));
      tokens += static_cast<int64_t>(ids.back().size());
    }
    const auto vectors = m.embed(ids);
    nlohmann::json data = nlohmann::json::array();
    for (size_t i = 0; i < vectors.size(); ++i)
      data.push_back({{"index", i}, {"tokens", ids[i].size()}, {"embedding", vectors[i]}});
    out["pooling"] = nlp::pooling_name(m.pooling());
    out["dimensions"] = m.dimensions();
    out["tokens"] = tokens;
    out["data"] = data;
  }
  std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  return 0;
}

}  // namespace

void add_embed_command(CLI::App& app, Handlers& h) {
  auto* cmd = add_command(app, "embed", "Sentence embeddings (or a cross-encoder's scores) of texts, as JSON",
                          "spore embed --model bge-small-en-v1.5 --text \"Hello world\" --text \"Bonjour\"");
  auto a = std::make_shared<EmbedArgs>();
  cmd->add_option("--model", a->model, "Model directory (config.json + safetensors) or .gguf file")->required();
  cmd->add_option("--text", a->texts, "A text to embed (repeatable)");
  cmd->add_option("--file", a->file, "A file with one text per line (empty lines skipped)");
  cmd->add_option("--pooling", a->pooling, "mean, cls or last (default: what the model says)")
      ->check(CLI::IsMember({"mean", "cls", "last"}));
  cmd->add_option("--query", a->query, "Score each text as a document for this query (cross-encoders)");
  cmd->add_option("--threads", a->threads, "Threads for the kernels (0: one per core)")->check(CLI::NonNegativeNumber);
  cmd->add_flag("--allow-unverified", a->allow_unverified, "Load even when the artifact does not match its lock");
  cmd->callback([&h, a] { h.action = [a] { return run_embed(*a); }; });
}

}  // namespace spore::cli
