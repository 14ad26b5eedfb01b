// Helpers of the LLM model tests (tests/nlp/model_*_test.cc): the fixtures written by
// tools/make_llm_fixtures.py, their references, and a greedy loop over the engine's forward.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "spore/format.h"
#include "spore/nlp/model.h"
#include "spore/ops.h"

namespace spore::test::llm {

inline const std::vector<std::string>& families() {
  static const std::vector<std::string> f = {"llama", "qwen2", "qwen3", "minicpm3"};
  return f;
}

inline std::filesystem::path fixture_dir(const std::string& family) {
  return std::filesystem::path(SPORE_SOURCE_DIR) / "tests" / "fixtures" / "llm" / family;
}

// The Hugging Face directory or the GGUF file of a family's fixture.
inline std::filesystem::path fixture_model(const std::string& family, bool gguf) {
  return gguf ? fixture_dir(family) / "model.gguf" : fixture_dir(family) / "hf";
}

struct Reference {
  std::vector<std::vector<int32_t>> prompts;
  std::vector<int32_t> greedy;  // continuation of prompts[0]
  SafeTensors logits;           // logits_<i>: float32 [len(prompt i), vocab]
};

inline Reference load_reference(const std::string& family) {
  std::ifstream in(fixture_dir(family) / "reference.json");
  std::stringstream ss;
  ss << in.rdbuf();
  const auto j = nlohmann::json::parse(ss.str());
  Reference r;
  for (const auto& p : j.at("prompts")) r.prompts.push_back(p.get<std::vector<int32_t>>());
  r.greedy = j.at("greedy").get<std::vector<int32_t>>();
  r.logits = load_safetensors(fixture_dir(family) / "reference.safetensors");
  return r;
}

inline double logits_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  const auto x = a.to_vector<float>(), y = b.to_vector<float>();
  double m = 0;
  for (size_t i = 0; i < std::min(x.size(), y.size()); ++i) m = std::max(m, std::fabs((double)x[i] - y[i]));
  return m;
}

inline int32_t argmax_row(const std::vector<float>& v, size_t row, size_t vocab) {
  return (int32_t)(std::max_element(v.begin() + row * vocab, v.begin() + (row + 1) * vocab) - (v.begin() + row * vocab));
}

// Prompt as one chunk, then one token per forward: the decode loop the engine runs.
inline std::vector<int32_t> greedy(nlp::CausalLM& lm, const std::vector<int32_t>& prompt, int n, DType cache_dtype) {
  auto cache = lm.make_cache(1, (int64_t)prompt.size() + n, cache_dtype);
  std::vector<int32_t> out;
  nlp::SequenceChunk c{0, 0, prompt};
  std::vector<int32_t> tok(1);
  for (int i = 0; i < n; ++i) {
    const Tensor logits = lm.forward({&c, 1}, *cache);
    const auto v = logits.to_vector<float>();
    tok[0] = argmax_row(v, 0, v.size());
    out.push_back(tok[0]);
    c = nlp::SequenceChunk{0, c.position + (int64_t)c.tokens.size(), tok};
  }
  return out;
}

// A scratch directory with a copy of a family's Hugging Face fixture, for tests that damage it.
inline std::filesystem::path scratch_copy(const std::string& family, const std::string& tag) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("spore_model_test_" + family + "_" + tag + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (const auto& e : std::filesystem::directory_iterator(fixture_model(family, false)))
    std::filesystem::copy_file(e.path(), dir / e.path().filename());
  return dir;
}

inline nlohmann::json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

inline void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

}  // namespace spore::test::llm
