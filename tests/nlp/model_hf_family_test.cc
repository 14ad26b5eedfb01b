// The families whose GGUF form (llama.cpp's converter's) cannot carry all that they do, from
// their Hugging Face folders (their GGUFs: model_sources_test.cc, NOTE [Dense families and their
// GGUF readings]; NOTE [Model families]): mistral (src/nlp/models/mistral.cc, a sliding window of 4 keys) and
// gemma2 (gemma2.cc: sandwich norms with weight + 1, GeGLU, soft-capped attention and logits,
// sliding window on every other layer). Their tiny random-weight fixtures
// (tools/make_llm_fixtures.py) against Hugging Face transformers' float32 logits and greedy
// tokens; the generator checks that the window changes transformers' logits, so ignoring it
// fails here. A new family of this kind adds its name to kFamilies.
#include <gtest/gtest.h>

#include "model_test_util.h"
#include "spore/nlp/convert.h"
#include "test_util.h"

namespace spore::test::llm {
namespace {

const std::vector<std::string> kFamilies = {"mistral", "gemma2"};

class HfFamilyTest : public ::testing::TestWithParam<std::string> {};

TEST_P(HfFamilyTest, LogitsMatchTransformers) {
  const std::string& family = GetParam();
  const Reference ref = load_reference(family);
  const auto m = nlp::load_model(fixture_model(family, false));
  EXPECT_EQ(m.lm->config().family, family);
  EXPECT_EQ(m.lm->config().extra.at("sliding_window"), 4);
  for (size_t i = 0; i < ref.prompts.size(); ++i) {
    auto cache = m.lm->make_cache(1, (int64_t)ref.prompts[i].size(), DType::kFloat32);
    nlp::SequenceChunk c{0, 0, ref.prompts[i], /*all_logits=*/true};
    EXPECT_LT(logits_diff(m.lm->forward({&c, 1}, *cache), ref.logits.at("logits_" + std::to_string(i))), 1e-4)
        << family << " prompt " << i;
  }
}

// The decode loop reads the window from the cache (past > 0), one token at a time.
TEST_P(HfFamilyTest, GreedyTokensMatchTransformers) {
  const Reference ref = load_reference(GetParam());
  const auto m = nlp::load_model(fixture_model(GetParam(), false));
  ASSERT_EQ(ref.greedy.size(), 16u);
  EXPECT_EQ(greedy(*m.lm, ref.prompts[0], (int)ref.greedy.size(), DType::kFloat32), ref.greedy);
}

// The window and the soft-caps have no ggml-numerics kernel: asking for them is refused at load,
// naming the way out.
TEST_P(HfFamilyTest, GgmlNumericsAreRefused) {
  nlp::LoadOptions o;
  o.numerics = nlp::LoadOptions::Numerics::kGgml;
  expect_error([&] { nlp::load_model(fixture_model(GetParam(), false), o); }, ErrorCode::kUnsupported, GetParam(),
               "--numerics reference");
}

INSTANTIATE_TEST_SUITE_P(Families, HfFamilyTest, ::testing::ValuesIn(kFamilies),
                         [](const auto& info) { return info.param; });

// spore convert maps mistral's tensors by the family's own table (the loader's) and writes what
// llama.cpp's converter writes for MistralForCausalLM: a "llama" GGUF with permuted q/k rows and no
// window. It loads as llama and equals transformers where the window does not reach (prompt 1,
// 2 tokens), and not where it does (prompt 0, 7 tokens): the window does not survive GGUF.
TEST(MistralFixture, ConvertWritesLlamaAsLlamaCppDoes) {
  const auto dir = scratch_copy("mistral", "convert");
  // A byte-level BPE tokenizer of the fixture's 256 ids (spore convert writes the tokenizer too).
  nlohmann::json vocab = {{"a", 0}, {"b", 1}, {"ab", 2}};
  for (int i = 3; i < 256; ++i) vocab[std::string("t").append(std::to_string(i))] = i;
  const nlohmann::json model = {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"a b"}}};
  write_text(dir / "tokenizer.json", nlohmann::json{{"model", model}, {"pre_tokenizer", {{"type", "ByteLevel"}}}}.dump());
  const auto out = dir / "mistral.gguf";
  const auto report = nlp::convert_hf_to_gguf(dir, out, {.type = "f32", .name = "", .progress = {}});
  EXPECT_EQ(report.architecture, "llama");
  nlp::LoadOptions o;
  o.numerics = nlp::LoadOptions::Numerics::kReference;
  const auto m = nlp::load_model(out, o);
  EXPECT_EQ(m.lm->config().family, "llama");
  const Reference ref = load_reference("mistral");
  auto run = [&](size_t i) {
    auto cache = m.lm->make_cache(1, (int64_t)ref.prompts[i].size(), DType::kFloat32);
    nlp::SequenceChunk c{0, 0, ref.prompts[i], true};
    return logits_diff(m.lm->forward({&c, 1}, *cache), ref.logits.at("logits_" + std::to_string(i)));
  };
  EXPECT_LT(run(1), 1e-4);
  EXPECT_GT(run(0), 1e-3);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace spore::test::llm
