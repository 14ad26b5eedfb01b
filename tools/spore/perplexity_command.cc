// spore perplexity --model PATH --file TEXT [--ctx 512] [--batch N]: how a user checks a
// (quantized) model file, computed as llama.cpp's llama-perplexity computes it (NOTE
// [Perplexity]). Progress and the estimate with its error bar for a person, then one JSON line
// last on stdout for tools (tools/make_perplexity_fixtures.py, tests/nlp/perplexity_cli_test.cc).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "spore/context.h"
#include "spore/error.h"
#include "spore/nlp/model.h"
#include "spore/nlp/perplexity.h"

namespace spore::cli {

namespace {

struct PerplexityArgs {
  std::string model, file, kv_cache = "f16", numerics = "auto";
  int64_t ctx = 512, batch = 0, chunks = 0;
  int threads = 0;
  bool allow_unverified = false;
};

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(ErrorCode::kIO, "perplexity: cannot read --file '" + path + "': " +
                                    (std::filesystem::exists(path) ? "permission denied or not a file" : "no such file"));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int run_perplexity(const PerplexityArgs& a) {
  const std::string text = read_text(a.file);
  set_num_threads(a.threads);
  nlp::LoadOptions lo;
  lo.allow_unverified = a.allow_unverified;
  lo.require_tokenizer = true;
  lo.numerics = nlp::parse_numerics(a.numerics);
  const auto m = nlp::load_model(a.model.empty() ? nlp::default_model_path() : std::filesystem::path(a.model), lo);
  if (m.verification_overridden)
    std::fprintf(stderr, "spore: WARNING: %s does not match its lock; loaded because of --allow-unverified\n",
                 m.path.string().c_str());
  std::vector<int32_t> tokens;
  try {
    tokens = m.tokenizer->encode(text, true);
  } catch (const Error& e) {
    throw Error(e.code(), "perplexity: --file '" + a.file + "': " + e.what());
  }
  nlp::PerplexityOptions o;
  o.context = a.ctx;
  o.batch = a.batch;
  o.max_chunks = a.chunks;
  o.kv_dtype = a.kv_cache == "f32" ? DType::kFloat32 : a.kv_cache == "bf16" ? DType::kBFloat16 : DType::kFloat16;
  const auto bos = nlp::perplexity_bos(*m.tokenizer);
  int64_t chunks = a.ctx >= 1 ? static_cast<int64_t>(tokens.size()) / a.ctx : 0;
  if (a.chunks > 0) chunks = std::min(chunks, a.chunks);
  std::printf("perplexity of %s (%s, %s numerics) on %s\n", m.path.filename().string().c_str(), m.format.c_str(),
              m.numerics.c_str(), a.file.c_str());
  std::printf("%zu tokens -> %lld chunks of %lld (the last %lld of each scored), BOS %s\n", tokens.size(),
              (long long)chunks, (long long)a.ctx, (long long)(a.ctx - a.ctx / 2 - 1),
              bos ? ("id " + std::to_string(*bos)).c_str() : "not added");
  std::fflush(stdout);
  const auto t0 = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  const nlp::PerplexityResult r =
      nlp::perplexity(*m.lm, tokens, bos, o, [&](int64_t i, int64_t n, const nlp::PerplexityStats& s) {
        std::printf("[%lld/%lld] PPL %.4f +/- %.4f  (%.1f s)\n", (long long)(i + 1), (long long)n, s.ppl(),
                    s.ppl_error(), seconds());
        std::fflush(stdout);
      });
  const double total = seconds();
  std::printf("Final estimate: PPL = %.4f +/- %.5f  (%lld tokens scored, %.1f s)\n", r.stats.ppl(),
              r.stats.ppl_error(), (long long)r.stats.count, total);
  nlohmann::json j = {{"model", m.path.string()},
                      {"file", a.file},
                      {"ctx", a.ctx},
                      {"batch", a.batch == 0 ? a.ctx : a.batch},
                      {"tokens", r.tokens},
                      {"chunks", r.chunks},
                      {"scored", r.stats.count},
                      {"ppl", r.stats.ppl()},
                      {"ppl_error", r.stats.ppl_error()},
                      {"nll_mean", r.stats.nll_sum / static_cast<double>(r.stats.count)},
                      {"running", r.running},
                      {"kv_cache", a.kv_cache},
                      {"numerics", m.numerics},
                      {"seconds", total}};
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

}  // namespace

void add_perplexity_command(CLI::App& app, Handlers& h) {
  auto* cmd = add_command(app, "perplexity",
                          "Perplexity of a model on a text file, as llama.cpp's llama-perplexity computes it",
                          "spore perplexity --model SmolLM2-135M-Instruct.Q4_K_M.gguf --file wiki.test.raw --ctx 512");
  auto a = std::make_shared<PerplexityArgs>();
  cmd->add_option("--model", a->model, "Model directory or .gguf file; default: the embedded SmolLM2");
  cmd->add_option("--file", a->file, "The text (UTF-8); it must tokenize to at least 2 x --ctx tokens")->required();
  cmd->add_option("--ctx", a->ctx, "Tokens per chunk; the second half of each chunk is scored")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--batch", a->batch, "Tokens per forward call: below --ctx, or a multiple of it to run chunks side by side (default: --ctx)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--chunks", a->chunks, "Run only the first N chunks (default: all)")->check(CLI::PositiveNumber);
  cmd->add_option("--threads", a->threads, "Threads for the kernels (0: one per core)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--kv-cache", a->kv_cache, "KV cache dtype: f16 (as llama.cpp), bf16 or f32")
      ->check(CLI::IsMember({"f16", "bf16", "f32"}))
      ->capture_default_str();
  cmd->add_option("--numerics", a->numerics, "auto (ggml for GGUF, reference for HF directories), reference or ggml")
      ->check(CLI::IsMember({"auto", "reference", "ggml"}))
      ->capture_default_str();
  cmd->add_flag("--allow-unverified", a->allow_unverified, "Load even when the artifact does not match its lock");
  cmd->callback([&h, a] { h.action = [a] { return run_perplexity(*a); }; });
}

}  // namespace spore::cli
