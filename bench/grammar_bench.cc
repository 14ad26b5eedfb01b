// Constrained decoding's cost per token (NOTE [Grammars]): replays a JSON text token by token
// under a grammar and times, at each step, the mask (GrammarMatcher::allowed), its application to
// a logits row (what the constrained sampler adds: apply_token_mask), and the advance (accept),
// next to the per-token work an unconstrained step already does over the same vocabulary (the
// sampler's float64 copy and argmax of a logits row). bench/grammar_e2e_bench.py runs it against
// llama.cpp's grammar sampler on the same token ids.
//   grammar_bench TOKENIZER SCHEMA.json TEXT.json [--gbnf FILE] [--ids-out FILE] [--per-token]
//     TOKENIZER: a tokenizer.json or a .gguf (its vocabulary). --gbnf: time this GBNF grammar
//     (e.g. the one llama.cpp's json_schema_to_grammar wrote) instead of Spore's translation of
//     the schema. --ids-out: write the replayed token ids there. --per-token: also the lists.
//     -> {"vocab", "tokens", "mask_us_mean", "mask_us_p50", "mask_us_max", "first_visit_us_mean",
//         "cached_us_mean", "apply_us_mean", "unconstrained_us_mean", "states_cached",
//         "trie_build_s", "trie_nodes"[, "mask_us": [...], "step_us": [...]]}
//     step_us: mask plus its application to the row, the constrained path's added work per token.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "nlp/generate/sampler.h"
#include "nlp/grammar/matcher.h"
#include "spore/gguf.h"
#include "spore/nlp/grammar.h"
#include "spore/nlp/tokenizer.h"

namespace {
std::string read(const char* path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}
void print_list(const char* name, const std::vector<double>& v) {
  std::printf(", \"%s\": [", name);
  for (size_t i = 0; i < v.size(); ++i) std::printf("%s%.2f", i ? ", " : "", v[i]);
  std::printf("]");
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: grammar_bench TOKENIZER SCHEMA.json TEXT.json [--gbnf FILE] [--ids-out FILE] [--per-token]\n");
    return 2;
  }
  const char *gbnf_path = nullptr, *ids_out = nullptr;
  bool per_token = false;
  for (int i = 4; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--gbnf") && i + 1 < argc) gbnf_path = argv[++i];
    else if (!std::strcmp(argv[i], "--ids-out") && i + 1 < argc) ids_out = argv[++i];
    else if (!std::strcmp(argv[i], "--per-token")) per_token = true;
    else {
      std::fprintf(stderr, "grammar_bench: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  using namespace spore::nlp;
  using clock = std::chrono::steady_clock;
  auto us = [](clock::time_point a, clock::time_point b) { return std::chrono::duration<double, std::micro>(b - a).count(); };
  const std::string tok_path = argv[1];
  const Tokenizer tok = tok_path.size() > 5 && tok_path.substr(tok_path.size() - 5) == ".gguf"
                            ? Tokenizer::from_gguf(spore::GgufFile(tok_path))
                            : Tokenizer::from_file(tok_path);
  const auto t0 = clock::now();
  const auto trie = std::make_shared<const detail::TokenTrie>(detail::token_bytes(tok), tok.vocab_size());
  const double trie_s = us(t0, clock::now()) / 1e6;
  const auto g = Grammar::from_gbnf(gbnf_path ? read(gbnf_path) : json_schema_to_gbnf(read(argv[2])));
  std::string text = read(argv[3]);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  const std::vector<int32_t> ids = tok.encode(text, false);
  if (ids_out) {
    std::ofstream f(ids_out);
    for (int32_t id : ids) f << id << '\n';
  }
  std::mt19937 rng(1);
  std::vector<float> row((size_t)tok.vocab_size());
  for (float& x : row) x = (float)(rng() % 1000) / 100.0f;
  std::vector<double> logits(row.begin(), row.end());

  detail::GrammarMatcher m(g, trie, {});
  std::vector<double> mask_us, step_us, first_us, cached_us, apply_us;
  for (int32_t id : ids) {
    std::copy(row.begin(), row.end(), logits.begin());
    const size_t before = m.cached_masks();
    const auto a = clock::now();
    const std::vector<uint64_t>& mask = m.allowed();
    const auto b = clock::now();
    detail::apply_token_mask(logits, mask);
    const auto c = clock::now();
    mask_us.push_back(us(a, b));
    apply_us.push_back(us(b, c));
    step_us.push_back(us(a, c));
    (m.cached_masks() > before ? first_us : cached_us).push_back(us(a, b));
    if (!detail::GrammarMatcher::test(mask, id)) {
      std::fprintf(stderr, "grammar_bench: the grammar does not allow token %d at step %zu\n", id, mask_us.size());
      return 1;
    }
    m.accept(id);
  }
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
              "\"first_visit_us_mean\": %.1f, \"cached_us_mean\": %.1f, \"apply_us_mean\": %.1f, "
              "\"unconstrained_us_mean\": %.1f, \"states_cached\": %zu, \"trie_build_s\": %.3f, \"trie_nodes\": %zu",
              tok.vocab_size(), ids.size(), mean(mask_us), sorted.empty() ? 0.0 : sorted[sorted.size() / 2],
              sorted.empty() ? 0.0 : sorted.back(), mean(first_us), mean(cached_us), mean(apply_us), unconstrained / 50,
              m.cached_masks(), trie_s, trie->size());
  if (per_token) {
    print_list("mask_us", mask_us);
    print_list("step_us", step_us);
  }
  std::printf("}\n");
  return 0;
}
