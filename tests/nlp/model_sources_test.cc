// Every family's tiny random-weight fixture (tools/make_llm_fixtures.py) from the three places a
// user's model comes from (NOTE [Model families]): the Hugging Face folder (safetensors), a GGUF
// written by llama.cpp's own convert_hf_to_gguf.py (model-llama-cpp.gguf, committed), and a GGUF
// written by spore convert (made here from the folder). Logits within 1e-4 of transformers' and
// 16 greedy tokens identical, loaded with the default options (GGUF: llama.cpp's numerics unless
// the family needs the reference ones). Where llama.cpp reads its converter's file differently
// from transformers (mistral without its window, gemma2 without query_pre_attn_scalar, gemma3 with
// llama.cpp's default layer pattern), the expectation is transformers under llama.cpp's reading
// (reference_llama_cpp.safetensors, greedy_llama_cpp), which the fixture script checked against
// llama.cpp itself. A family added to kFamilies runs from all three.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "model_test_util.h"
#include "spore/gguf.h"
#include "spore/nlp/convert.h"
#include "test_util.h"

namespace spore::test::llm {
namespace {

const std::vector<std::string> kFamilies = {"llama",  "qwen2", "qwen3", "minicpm3", "mistral", "gemma2",
                                            "gemma",  "gemma3", "phi3", "granite",  "olmo2"};
// Families whose GGUF keeps what transformers runs only when spore convert writes it: gemma3's
// layer pattern (spore convert writes the integer llama.cpp reads; llama.cpp's converter omits it).
const std::set<std::string> kSporeConvertKeepsHf = {"gemma3"};

enum class Source { kHf, kLlamaCpp, kSporeConvert };

// A byte-level BPE tokenizer.json over the fixtures' 256 ids: spore convert writes the tokenizer
// too, and the fixtures carry only SentencePiece stand-ins.
void write_tiny_tokenizer_json(const std::filesystem::path& dir) {
  nlohmann::json vocab = {{"a", 0}, {"b", 1}, {"ab", 2}};
  for (int i = 3; i < 256; ++i) vocab[std::string("t").append(std::to_string(i))] = i;
  const nlohmann::json model = {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"a b"}}};
  write_text(dir / "tokenizer.json", nlohmann::json{{"model", model}, {"pre_tokenizer", {{"type", "ByteLevel"}}}}.dump());
}

// The scratch folders of spore_converted, removed when the test program ends.
struct ScratchDirs {
  std::map<std::string, std::filesystem::path> gguf;
  ~ScratchDirs() {
    for (const auto& [family, path] : gguf) std::filesystem::remove_all(path.parent_path());
  }
};

// spore convert's f32 GGUF of a family's fixture, written once per process.
std::filesystem::path spore_converted(const std::string& family) {
  static ScratchDirs scratch;
  auto& done = scratch.gguf;
  if (auto it = done.find(family); it != done.end()) return it->second;
  const auto dir = scratch_copy(family, "sources");
  std::filesystem::remove(dir / "tokenizer.model");
  write_tiny_tokenizer_json(dir);
  const auto out = dir / "model.gguf";
  nlp::convert_hf_to_gguf(dir, out, {.type = "f32", .name = "", .progress = {}});
  return done[family] = out;
}

std::filesystem::path model_path(const std::string& family, Source s) {
  switch (s) {
    case Source::kHf: return fixture_model(family, false);
    case Source::kLlamaCpp: return fixture_dir(family) / "model-llama-cpp.gguf";
    case Source::kSporeConvert: return spore_converted(family);
  }
  return {};
}

// transformers' outputs the file should give: its own, or under llama.cpp's reading of the file.
struct Expected {
  std::vector<std::vector<int32_t>> prompts;
  std::vector<int32_t> greedy;
  SafeTensors logits;
};

Expected expected(const std::string& family, Source s) {
  const Reference ref = load_reference(family);
  Expected e{ref.prompts, ref.greedy, ref.logits};
  const bool llama_cpp_reading =
      s == Source::kLlamaCpp || (s == Source::kSporeConvert && !kSporeConvertKeepsHf.count(family));
  const auto other = fixture_dir(family) / "reference_llama_cpp.safetensors";
  if (llama_cpp_reading && std::filesystem::exists(other)) {
    e.logits = load_safetensors(other);
    e.greedy = read_json(fixture_dir(family) / "reference.json").at("greedy_llama_cpp").get<std::vector<int32_t>>();
  }
  return e;
}

const char* source_name(Source s) {
  return s == Source::kHf ? "hf" : s == Source::kLlamaCpp ? "llama_cpp" : "spore_convert";
}

class SourcesTest : public ::testing::TestWithParam<std::tuple<std::string, Source>> {};

TEST_P(SourcesTest, LogitsMatchTransformers) {
  const auto& [family, source] = GetParam();
  const Expected want = expected(family, source);
  const auto m = nlp::load_model(model_path(family, source));
  EXPECT_EQ(m.lm->config().family, family == "mistral" && source != Source::kHf ? "llama" : family);
  for (size_t i = 0; i < want.prompts.size(); ++i) {
    auto cache = m.lm->make_cache(1, (int64_t)want.prompts[i].size(), DType::kFloat32);
    nlp::SequenceChunk c{0, 0, want.prompts[i], /*all_logits=*/true};
    EXPECT_LT(logits_diff(m.lm->forward({&c, 1}, *cache), want.logits.at("logits_" + std::to_string(i))), 1e-4)
        << family << " " << source_name(source) << " prompt " << i << " (numerics " << m.numerics << ")";
  }
}

TEST_P(SourcesTest, GreedyTokensMatchTransformers) {
  const auto& [family, source] = GetParam();
  const Expected want = expected(family, source);
  const auto m = nlp::load_model(model_path(family, source));
  ASSERT_EQ(want.greedy.size(), 16u);
  EXPECT_EQ(greedy(*m.lm, want.prompts[0], (int)want.greedy.size(), DType::kFloat32), want.greedy);
}

std::vector<std::tuple<std::string, Source>> cases() {
  std::vector<std::tuple<std::string, Source>> out;
  for (const auto& f : kFamilies) {
    // The first four families' and mistral's / gemma2's folders run in model_fixture_test.cc and
    // model_hf_family_test.cc already.
    const bool hf_elsewhere = f == "llama" || f == "qwen2" || f == "qwen3" || f == "minicpm3" || f == "mistral" || f == "gemma2";
    if (!hf_elsewhere) out.emplace_back(f, Source::kHf);
    out.emplace_back(f, Source::kLlamaCpp);
    out.emplace_back(f, Source::kSporeConvert);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Families, SourcesTest, ::testing::ValuesIn(cases()), [](const auto& info) {
  return std::get<0>(info.param) + "_" + source_name(std::get<1>(info.param));
});

// The default numerics of a GGUF: llama.cpp's where it has a kernel for every block, the reference
// ones where the family needs a window, a soft-cap or a second rope base (asking for ggml there is
// refused, naming the way out).
TEST(ModelSources, GgufNumericsFollowTheFamily) {
  EXPECT_EQ(nlp::load_model(model_path("qwen2", Source::kLlamaCpp)).numerics, "ggml");
  EXPECT_EQ(nlp::load_model(model_path("granite", Source::kLlamaCpp)).numerics, "ggml");
  for (const char* f : {"gemma2", "gemma3"}) {
    EXPECT_EQ(nlp::load_model(model_path(f, Source::kLlamaCpp)).numerics, "reference") << f;
    nlp::LoadOptions o;
    o.numerics = nlp::LoadOptions::Numerics::kGgml;
    expect_error([&] { nlp::load_model(model_path(f, Source::kLlamaCpp), o); }, ErrorCode::kUnsupported, f,
                 "--numerics reference");
  }
}

// The hyperparameters read from config.json and from llama.cpp's GGUF agree where the file keeps
// them (granite's multipliers, gemma3's rope bases and window, phi3's original context).
TEST(ModelSources, FamilyHyperparametersAgreeBetweenHfAndLlamaCppGguf) {
  auto both = [](const std::string& f) {
    return std::make_pair(nlp::ModelConfig::from_hf_json(fixture_model(f, false) / "config.json"),
                          nlp::ModelConfig::from_gguf(GgufFile(model_path(f, Source::kLlamaCpp))));
  };
  {
    const auto [a, b] = both("granite");
    for (const char* key : {"embedding_multiplier", "residual_multiplier", "attention_multiplier", "logits_scaling"})
      EXPECT_FLOAT_EQ((float)a.extra.at(key), (float)b.extra.at(key)) << key;
    EXPECT_EQ(a.extra.at("logits_scaling"), 4.0);
  }
  {
    const auto [a, b] = both("gemma3");
    EXPECT_EQ(a.extra.at("rope_local_base_freq"), b.extra.at("rope_local_base_freq"));
    EXPECT_EQ(a.rope_theta, b.rope_theta);
    EXPECT_NE(a.rope_theta, a.extra.at("rope_local_base_freq"));
    EXPECT_EQ(a.extra.at("sliding_window"), b.extra.at("sliding_window"));
    EXPECT_EQ(a.extra.at("sliding_window_pattern"), 2);  // layer_types: sliding, full
    // No pattern key: llama.cpp's default 6, which at 2 layers slides both (stored as 0, "all").
    EXPECT_EQ(b.extra.at("sliding_window_pattern"), 0);
    EXPECT_TRUE(a.qk_norm && b.qk_norm);
  }
  {
    const auto [a, b] = both("phi3");
    EXPECT_EQ(a.rope_scaling.type, "longrope");
    EXPECT_EQ(b.rope_scaling.type, "longrope");
    EXPECT_EQ(a.rope_scaling.original_max_position, b.rope_scaling.original_max_position);
  }
}

}  // namespace
}  // namespace spore::test::llm
