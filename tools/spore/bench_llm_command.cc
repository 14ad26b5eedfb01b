// spore bench-llm --model GGUF [--threads N] [--prompt-tokens 512] [--gen-tokens 128]
//                 [--repetitions R] [--json]
// Prefill and decode speed measured the way llama.cpp's llama-bench measures pp512 / tg128
// (NOTE [LLM benchmark]): prefill is one forward pass over P random token ids into an empty KV
// cache; decode is G forward passes of one token each, from position 0, no sampling. Each test
// runs once unmeasured (warm-up: page faults on the mapping, scratch allocation), then R times;
// the figure is tokens / seconds per repetition, reported as mean and standard deviation as
// llama-bench does, with the median too. Peak resident memory (getrusage) is printed as well.
#include <sys/resource.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "commands.h"
#include "spore/context.h"
#include "spore/error.h"
#include "spore/llm.h"
#include "spore/nlp/model.h"

namespace spore::cli {

namespace {

struct BenchArgs {
  std::string model;
  int threads = 0;
  int64_t prompt_tokens = 512, gen_tokens = 128;
  int repetitions = 3;
  bool json = false, allow_unverified = false, no_repack = false;
};

struct Stats {
  std::vector<double> samples;  // tokens/s per repetition
  double mean() const { return std::accumulate(samples.begin(), samples.end(), 0.0) / (double)samples.size(); }
  double stddev() const {
    if (samples.size() < 2) return 0;
    const double m = mean();
    double s = 0;
    for (double x : samples) s += (x - m) * (x - m);
    return std::sqrt(s / (double)(samples.size() - 1));
  }
  double median() const {
    std::vector<double> v = samples;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  }
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One prefill of `ids` into slot 0 from position 0 (the cache is simply overwritten next time).
double time_prefill(nlp::CausalLM& lm, nlp::KvCache& cache, const std::vector<int32_t>& ids) {
  nlp::SequenceChunk c{0, 0, ids};
  const auto t0 = std::chrono::steady_clock::now();
  const Tensor logits = lm.forward({&c, 1}, cache);
  const double s = seconds_since(t0);
  (void)logits;
  return s;
}

// `n` one-token forward passes at positions 0..n-1.
double time_decode(nlp::CausalLM& lm, nlp::KvCache& cache, const std::vector<int32_t>& ids, int64_t n) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < n; ++i) {
    nlp::SequenceChunk c{0, i, std::span<const int32_t>(&ids[(size_t)(i % (int64_t)ids.size())], 1)};
    const Tensor logits = lm.forward({&c, 1}, cache);
    (void)logits;
  }
  return seconds_since(t0);
}

int run_bench(const BenchArgs& a) {
  set_num_threads(a.threads);
  nlp::LoadOptions lo;
  lo.allow_unverified = a.allow_unverified;
  set_repack_at_load(!a.no_repack);
  const std::filesystem::path path = a.model.empty() ? nlp::default_model_path() : std::filesystem::path(a.model);
  const nlp::LoadedModel m = nlp::load_model(path, lo);
  nlp::CausalLM& lm = *m.lm;
  const nlp::ModelConfig& cfg = lm.config();
  const int64_t need = std::max(a.prompt_tokens, a.gen_tokens);
  if (cfg.max_position_embeddings > 0 && need > cfg.max_position_embeddings)
    throw Error(ErrorCode::kValue, "bench-llm: " + std::to_string(need) + " tokens exceed the model's context of " +
                                       std::to_string(cfg.max_position_embeddings) + "; lower --prompt-tokens / --gen-tokens");
  auto cache = lm.make_cache(1, need, DType::kFloat16);  // llama.cpp's default cache type
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int32_t> pick(0, (int32_t)cfg.vocab_size - 1);
  std::vector<int32_t> ids((size_t)need);
  for (auto& t : ids) t = pick(rng);
  const std::vector<int32_t> prompt(ids.begin(), ids.begin() + a.prompt_tokens);

  Stats pp, tg;
  if (a.prompt_tokens > 0) {
    time_prefill(lm, *cache, prompt);
    for (int r = 0; r < a.repetitions; ++r) pp.samples.push_back((double)a.prompt_tokens / time_prefill(lm, *cache, prompt));
  }
  if (a.gen_tokens > 0) {
    time_decode(lm, *cache, ids, std::min<int64_t>(a.gen_tokens, 8));
    for (int r = 0; r < a.repetitions; ++r)
      tg.samples.push_back((double)a.gen_tokens / time_decode(lm, *cache, ids, a.gen_tokens));
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const uint64_t peak_rss = (uint64_t)ru.ru_maxrss * 1024;
  const nlp::MemoryReport w = lm.weight_memory();
  const int threads = num_threads();

  if (a.json) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    auto row = [&](const char* test, int64_t n, const Stats& s) {
      rows.push_back({{"model", path.string()}, {"threads", threads}, {"test", test}, {"n_tokens", n},
                      {"tokens_per_s", s.mean()}, {"stddev", s.stddev()}, {"median", s.median()},
                      {"samples", s.samples}, {"weights_bytes", w.weights_mapped + w.weights_resident},
                      {"kv_cache_bytes", cache->nbytes()}, {"peak_rss_bytes", peak_rss}, {"load_s", m.load_seconds}});
    };
    if (!pp.samples.empty()) row(("pp" + std::to_string(a.prompt_tokens)).c_str(), a.prompt_tokens, pp);
    if (!tg.samples.empty()) row(("tg" + std::to_string(a.gen_tokens)).c_str(), a.gen_tokens, tg);
    std::printf("%s\n", rows.dump(1).c_str());
    return 0;
  }
  std::printf("model   %s (%s, %lld layers, hidden %lld)\nweights %.1f MiB (mapped %.1f MiB), peak RSS %.1f MiB\n",
              path.c_str(), cfg.family.c_str(), (long long)cfg.num_layers, (long long)cfg.hidden_size,
              (double)(w.weights_mapped + w.weights_resident) / 1048576.0, (double)w.weights_mapped / 1048576.0,
              (double)peak_rss / 1048576.0);
  std::printf("| threads | test   |            t/s |   median |\n|--------:|:-------|---------------:|---------:|\n");
  if (!pp.samples.empty())
    std::printf("| %7d | pp%-4lld | %7.2f ± %5.2f | %8.2f |\n", threads, (long long)a.prompt_tokens, pp.mean(), pp.stddev(), pp.median());
  if (!tg.samples.empty())
    std::printf("| %7d | tg%-4lld | %7.2f ± %5.2f | %8.2f |\n", threads, (long long)a.gen_tokens, tg.mean(), tg.stddev(), tg.median());
  return 0;
}

}  // namespace

void add_bench_llm_command(CLI::App& app, Handlers& h) {
  auto a = std::make_shared<BenchArgs>();
  auto* cmd = add_command(app, "bench-llm", "Prefill and decode tokens/s of a model, as llama-bench measures pp512 / tg128",
                          "spore bench-llm --model models/smollm2-135m-instruct --threads 2");
  cmd->add_option("--model", a->model, "GGUF file or model directory (default: the embedded SmolLM2-135M-Instruct)");
  cmd->add_option("--threads", a->threads, "Threads for the kernels (0: one per core)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--prompt-tokens", a->prompt_tokens, "Prefill test: tokens in one forward pass (0: skip)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--gen-tokens", a->gen_tokens, "Decode test: one-token forward passes (0: skip)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--repetitions", a->repetitions, "Measured repetitions of each test")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_flag("--json", a->json, "Print one JSON array of rows instead of the table");
  cmd->add_flag("--allow-unverified", a->allow_unverified, "Load even when the artifact does not match its lock");
  cmd->add_flag("--no-repack", a->no_repack, kNoRepackHelp);
  cmd->callback([&h, a] {
    h.action = [a] {
      if (a->prompt_tokens == 0 && a->gen_tokens == 0)
        throw Error(ErrorCode::kValue, "bench-llm: --prompt-tokens and --gen-tokens are both 0; nothing to measure");
      return run_bench(*a);
    };
  });
}

}  // namespace spore::cli
