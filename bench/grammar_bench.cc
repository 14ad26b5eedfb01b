// Constrained decoding's cost per token (NOTE [Grammars]): replays a JSON text token by token
// under a JSON Schema's grammar and times the mask (GrammarMatcher::allowed) and the advance
// (accept) at each step, against the work an unconstrained step already does on the same
// vocabulary (the sampler's float64 copy and argmax of a logits row). One run, wall and CPU time.
//   grammar_bench TOKENIZER SCHEMA.json TEXT.json
//     -> {"vocab", "tokens", "mask_us_mean", "mask_us_p50", "mask_us_max", "first_visit_us_mean",
//         "cached_us_mean", "unconstrained_us_mean", "states_cached", "trie_build_s", "trie_nodes"}
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "nlp/grammar/matcher.h"
#include "spore/nlp/grammar.h"
#include "spore/nlp/tokenizer.h"

namespace {
std::string read(const char* path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: grammar_bench TOKENIZER SCHEMA.json TEXT.json\n");
    return 2;
  }
  using namespace spore::nlp;
  using clock = std::chrono::steady_clock;
  auto us = [](clock::time_point a, clock::time_point b) { return std::chrono::duration<double, std::micro>(b - a).count(); };
  const Tokenizer tok = Tokenizer::from_file(argv[1]);
  const auto t0 = clock::now();
  const auto trie = std::make_shared<const detail::TokenTrie>(detail::token_bytes(tok), tok.vocab_size());
  const double trie_s = us(t0, clock::now()) / 1e6;
  const auto g = Grammar::from_gbnf(json_schema_to_gbnf(read(argv[2])));
  std::string text = read(argv[3]);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  const std::vector<int32_t> ids = tok.encode(text);
  detail::GrammarMatcher m(g, trie, {});
  std::vector<double> mask_us, first_us, cached_us;
  for (int32_t id : ids) {
    const size_t before = m.cached_masks();
    const auto a = clock::now();
    m.allowed();
    const double t = us(a, clock::now());
    mask_us.push_back(t);
    (m.cached_masks() > before ? first_us : cached_us).push_back(t);
    m.accept(id);
  }
  // The unconstrained step's own per-token work over the vocabulary, for scale.
  std::mt19937 rng(1);
  std::vector<float> row((size_t)tok.vocab_size());
  for (float& x : row) x = (float)(rng() % 1000) / 100.0f;
  double unconstrained = 0;
  for (int i = 0; i < 50; ++i) {
    const auto a = clock::now();
    std::vector<double> l(row.begin(), row.end());
    volatile auto best = std::max_element(l.begin(), l.end()) - l.begin();
    (void)best;
    unconstrained += us(a, clock::now());
  }
  auto mean = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return v.empty() ? 0.0 : s / (double)v.size();
  };
  std::vector<double> sorted = mask_us;
  std::sort(sorted.begin(), sorted.end());
  std::printf("{\"vocab\": %d, \"tokens\": %zu, \"mask_us_mean\": %.1f, \"mask_us_p50\": %.1f, \"mask_us_max\": %.1f, "
              "\"first_visit_us_mean\": %.1f, \"cached_us_mean\": %.1f, \"unconstrained_us_mean\": %.1f, "
              "\"states_cached\": %zu, \"trie_build_s\": %.3f, \"trie_nodes\": %zu}\n",
              tok.vocab_size(), ids.size(), mean(mask_us), sorted.empty() ? 0.0 : sorted[sorted.size() / 2],
              sorted.empty() ? 0.0 : sorted.back(), mean(first_us), mean(cached_us), unconstrained / 50, m.cached_masks(),
              trie_s, trie->nodes().size());
  return 0;
}
