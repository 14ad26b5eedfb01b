// The peer of bench/grammar_e2e_bench.py (NOTE [Grammars]): llama.cpp's own grammar sampler
// (llama_sampler_init_grammar, what llama-server builds for a `json_schema` request) timed per
// token on the same schema, vocabulary and token sequence as Spore's mask. Built by the bench
// script against llama.cpp's sources and its native peer build (libllama, libllama-common); never
// linked into Spore.
//
//   llama_grammar_mask MODEL.gguf SCHEMA.json IDS.txt [GBNF_OUT]
//     IDS.txt: the token ids to replay, whitespace separated. Loads only the GGUF's vocabulary,
//     translates the schema with llama.cpp's json_schema_to_grammar (GBNF_OUT: where to write
//     that GBNF, so Spore can also be timed on llama.cpp's exact grammar), then for each id: a
//     full-vocabulary candidate array (a fixed logits row, filled outside the timing), the grammar
//     sampler's apply (timed: the mask computation and its application to the candidates), a
//     check that the id survived, and accept (timed separately).
//     -> {"vocab", "tokens", "apply_us": [...], "accept_us": [...]}
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "json-schema-to-grammar.h"
#include "llama.h"

namespace {
std::string read(const char* path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}
void quiet(enum ggml_log_level, const char*, void*) {}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: llama_grammar_mask MODEL.gguf SCHEMA.json IDS.txt [GBNF_OUT]\n");
    return 2;
  }
  llama_log_set(quiet, nullptr);
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.vocab_only = true;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) {
    std::fprintf(stderr, "llama_grammar_mask: cannot load %s\n", argv[1]);
    return 1;
  }
  const llama_vocab* vocab = llama_model_get_vocab(model);
  const int32_t n_vocab = llama_vocab_n_tokens(vocab);
  const std::string gbnf = json_schema_to_grammar(common_json::parse(read(argv[2])));
  if (argc == 5) {
    std::ofstream(argv[4], std::ios::binary) << gbnf;
  }
  std::vector<int32_t> ids;
  {
    std::ifstream f(argv[3]);
    for (int32_t id; f >> id;) ids.push_back(id);
  }
  llama_sampler* grammar = llama_sampler_init_grammar(vocab, gbnf.c_str(), "root");
  if (!grammar) {
    std::fprintf(stderr, "llama_grammar_mask: llama.cpp refused the grammar of %s\n", argv[2]);
    return 1;
  }
  std::mt19937 rng(1);
  std::vector<float> row((size_t)n_vocab);
  for (float& x : row) x = (float)(rng() % 1000) / 100.0f;
  std::vector<llama_token_data> cand((size_t)n_vocab);
  using clock = std::chrono::steady_clock;
  auto us = [](clock::time_point a, clock::time_point b) { return std::chrono::duration<double, std::micro>(b - a).count(); };
  std::vector<double> apply_us, accept_us;
  for (int32_t id : ids) {
    for (int32_t t = 0; t < n_vocab; ++t) cand[(size_t)t] = {t, row[(size_t)t], 0.0f};
    llama_token_data_array arr{cand.data(), cand.size(), -1, false};
    const auto a = clock::now();
    llama_sampler_apply(grammar, &arr);
    const auto b = clock::now();
    apply_us.push_back(us(a, b));
    bool ok = false;
    for (size_t i = 0; i < arr.size; ++i)
      if (arr.data[i].id == id) ok = std::isfinite(arr.data[i].logit);
    if (!ok) {
      std::fprintf(stderr, "llama_grammar_mask: llama.cpp's grammar rejects token %d at step %zu\n", id, apply_us.size());
      return 1;
    }
    const auto c = clock::now();
    llama_sampler_accept(grammar, id);
    accept_us.push_back(us(c, clock::now()));
  }
  std::printf("{\"vocab\": %d, \"tokens\": %zu, \"apply_us\": [", n_vocab, ids.size());
  for (size_t i = 0; i < apply_us.size(); ++i) std::printf("%s%.2f", i ? ", " : "", apply_us[i]);
  std::printf("], \"accept_us\": [");
  for (size_t i = 0; i < accept_us.size(); ++i) std::printf("%s%.2f", i ? ", " : "", accept_us[i]);
  std::printf("]}\n");
  llama_sampler_free(grammar);
  llama_model_free(model);
  return 0;
}
