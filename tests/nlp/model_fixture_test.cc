// Every family's tiny random-weight fixture (tools/make_llm_fixtures.py) against Hugging Face
// transformers' float32 logits and greedy tokens, from safetensors and from GGUF F32 (where
// llama's q/k rows are permuted for the interleaved rope and Llama 3's scaling is the
// rope_freqs.weight tensor), with a float32 KV cache; and the default float16 cache close to it.
#include <gtest/gtest.h>

#include "model_test_util.h"
#include "spore/gguf.h"

namespace spore::test::llm {
namespace {

class FixtureTest : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(FixtureTest, LogitsMatchTransformers) {
  const auto& [family, gguf] = GetParam();
  const Reference ref = load_reference(family);
  const auto m = nlp::load_model(fixture_model(family, gguf));
  EXPECT_EQ(m.format, gguf ? "gguf" : "safetensors");
  EXPECT_EQ(m.lm->config().family, family);
  for (size_t i = 0; i < ref.prompts.size(); ++i) {
    auto cache = m.lm->make_cache(1, (int64_t)ref.prompts[i].size(), DType::kFloat32);
    nlp::SequenceChunk c{0, 0, ref.prompts[i], /*all_logits=*/true};
    const Tensor logits = m.lm->forward({&c, 1}, *cache);
    const Tensor& want = ref.logits.at("logits_" + std::to_string(i));
    EXPECT_LT(max_abs_diff(logits, want), 1e-4) << family << (gguf ? " gguf" : " hf") << " prompt " << i;
  }
}

TEST_P(FixtureTest, GreedyTokensMatchTransformers) {
  const auto& [family, gguf] = GetParam();
  const Reference ref = load_reference(family);
  const auto m = nlp::load_model(fixture_model(family, gguf));
  EXPECT_EQ(greedy(*m.lm, ref.prompts[0], (int)ref.greedy.size(), DType::kFloat32), ref.greedy);
}

// The float16 cache (the default) rounds keys and values: the logits stay close, not equal.
TEST_P(FixtureTest, Float16CacheIsClose) {
  const auto& [family, gguf] = GetParam();
  const Reference ref = load_reference(family);
  const auto m = nlp::load_model(fixture_model(family, gguf));
  auto cache = m.lm->make_cache(1, 0);
  EXPECT_EQ(cache->dtype(), DType::kFloat16);
  EXPECT_EQ(cache->context(), m.lm->config().max_position_embeddings);
  EXPECT_EQ(cache->nbytes(), m.lm->kv_bytes_per_token() * (uint64_t)cache->context());
  nlp::SequenceChunk c{0, 0, ref.prompts[0], true};
  const Tensor logits = m.lm->forward({&c, 1}, *cache);
  const double d = max_abs_diff(logits, ref.logits.at("logits_0"));
  EXPECT_LT(d, 5e-2);
  EXPECT_GT(d, 0.0);  // the rounding is real: this is not the float32 path
}

INSTANTIATE_TEST_SUITE_P(Families, FixtureTest,
                         ::testing::Combine(::testing::ValuesIn(families()), ::testing::Bool()),
                         [](const auto& info) {
                           return std::get<0>(info.param) + (std::get<1>(info.param) ? "_gguf" : "_hf");
                         });

// The config read from config.json and from GGUF metadata describe the same model.
TEST(ModelConfig, HfAndGgufAgree) {
  for (const auto& family : families()) {
    const auto a = nlp::ModelConfig::from_hf_json(fixture_model(family, false) / "config.json");
    const auto b = nlp::ModelConfig::from_gguf(GgufFile(fixture_model(family, true)));
    EXPECT_EQ(a.family, b.family);
    EXPECT_EQ(a.vocab_size, b.vocab_size) << family;
    EXPECT_EQ(a.hidden_size, b.hidden_size);
    EXPECT_EQ(a.intermediate_size, b.intermediate_size);
    EXPECT_EQ(a.num_layers, b.num_layers);
    EXPECT_EQ(a.num_heads, b.num_heads);
    EXPECT_EQ(a.num_kv_heads, b.num_kv_heads);
    EXPECT_EQ(a.head_dim, b.head_dim) << family;
    EXPECT_EQ(a.max_position_embeddings, b.max_position_embeddings);
    EXPECT_FLOAT_EQ((float)a.rms_norm_eps, (float)b.rms_norm_eps);
    EXPECT_FLOAT_EQ((float)a.rope_theta, (float)b.rope_theta);
    EXPECT_EQ(a.tie_word_embeddings, b.tie_word_embeddings) << family;
    EXPECT_EQ(a.attention_bias, b.attention_bias) << family;
    EXPECT_EQ(a.qk_norm, b.qk_norm);
    EXPECT_EQ(a.bos_id, b.bos_id);
    EXPECT_EQ(a.eos_ids, b.eos_ids);
  }
}

// Weights are used in place from the mapping: nothing resident for float32 fixtures.
TEST(ModelMemory, Float32WeightsAreMapped) {
  for (bool gguf : {false, true}) {
    const auto m = nlp::load_model(fixture_model("qwen3", gguf));
    const auto mem = m.lm->weight_memory();
    EXPECT_GT(mem.weights_mapped, 60000u);
    EXPECT_EQ(mem.weights_resident, 0u);
  }
}

}  // namespace
}  // namespace spore::test::llm
