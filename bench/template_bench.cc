// Chat-template render time (issue 11): a 20-turn conversation through the Qwen3 template, as
// `spore template` renders it: JSON messages in, prompt text out (template parsed once, as
// transformers caches its compiled template). The conversation, the jinja2 peer and the ratio:
// bench/template_bench.py.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "spore/nlp/chat_template.h"

#ifndef SPORE_SOURCE_DIR
#define SPORE_SOURCE_DIR "."
#endif

namespace {

// The conversation comes from bench/template_bench.py (so both sides render the same input):
// a JSON file {"messages": [...], "kwargs": {...}} named by SPORE_TEMPLATE_BENCH_INPUT.
nlohmann::ordered_json bench_input() {
  const char* path = std::getenv("SPORE_TEMPLATE_BENCH_INPUT");
  if (!path) {
    std::fprintf(stderr, "template_bench: run it through bench/template_bench.py (SPORE_TEMPLATE_BENCH_INPUT unset)\n");
    std::exit(2);
  }
  std::ifstream f(path);
  return nlohmann::ordered_json::parse(f);
}

void BM_Qwen3Template20Turns(benchmark::State& state) {
  auto t = spore::nlp::ChatTemplate::load(std::string(SPORE_SOURCE_DIR) + "/tests/fixtures/templates/qwen3-0.6b");
  static const nlohmann::ordered_json input = bench_input();
  std::string messages = input["messages"].dump();
  std::string kwargs = input["kwargs"].dump();
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::string out = t.render(messages, true, kwargs);
    bytes = out.size();
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["prompt_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_Qwen3Template20Turns)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
