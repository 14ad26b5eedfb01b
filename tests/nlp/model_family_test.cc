// The family files' own config handling (NOTE [Model families]): a family's hyperparameters in
// ModelConfig::extra read alike from config.json and from GGUF metadata, mistral's window checked
// by name, gemma2's options read and checked, and spore convert refusing a family it does not
// write, naming the ones it does.
#include <gtest/gtest.h>

#include "model_test_util.h"
#include "nlp/model_internal.h"
#include "spore/gguf.h"
#include "spore/nlp/convert.h"
#include "test_util.h"

namespace spore::test::llm {
namespace {

// minicpm3's GGUF carries the ranks and head sizes; its scales are llama.cpp's constants, which
// the fixture's config.json also uses (12, 1.4, 256).
TEST(ModelFamilies, Minicpm3ExtraAgreesBetweenHfAndGguf) {
  const auto a = nlp::ModelConfig::from_hf_json(fixture_model("minicpm3", false) / "config.json");
  const auto b = nlp::ModelConfig::from_gguf(GgufFile(fixture_model("minicpm3", true)));
  const nlohmann::json cfg = read_json(fixture_model("minicpm3", false) / "config.json");
  for (const char* key : {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "scale_emb",
                          "scale_depth", "dim_model_base"}) {
    EXPECT_DOUBLE_EQ(a.extra.at(key), cfg.at(key).get<double>()) << key;
    EXPECT_NEAR(b.extra.at(key), cfg.at(key).get<double>(), 1e-12) << key;
  }
  EXPECT_EQ(a.v_head_dim, b.v_head_dim);
  EXPECT_EQ(a.v_head_dim, cfg.at("v_head_dim").get<int64_t>());
  EXPECT_TRUE(nlp::ModelConfig::from_hf_json(fixture_model("qwen3", false) / "config.json").extra.empty());
}

TEST(ModelFamilies, MistralWindowIsChecked) {
  nlohmann::json j = read_json(fixture_model("mistral", false) / "config.json");
  j["sliding_window"] = -3;
  expect_error([&] { nlp::config_from_json(j, "mistral.json"); }, ErrorCode::kFormat, "mistral.json", "sliding_window");
  j["sliding_window"] = "wide";
  expect_error([&] { nlp::config_from_json(j, "mistral.json"); }, ErrorCode::kFormat, "sliding_window", "integer");
  // null (Mistral 7B v0.2 and later), or a window the whole context fits in: no window.
  j["sliding_window"] = nullptr;
  EXPECT_FALSE(nlp::config_from_json(j, "mistral.json").extra.count("sliding_window"));
  j["sliding_window"] = j["max_position_embeddings"];
  EXPECT_FALSE(nlp::config_from_json(j, "mistral.json").extra.count("sliding_window"));
  j["sliding_window"] = 5;
  EXPECT_EQ(nlp::config_from_json(j, "mistral.json").extra.at("sliding_window"), 5);
}

// gemma2: null switches a soft-cap or the window off; an activation or a layer pattern it does not
// run is refused by name rather than run differently.
TEST(ModelFamilies, Gemma2ConfigIsChecked) {
  nlohmann::json j = read_json(fixture_model("gemma2", false) / "config.json");
  const auto c = nlp::config_from_json(j, "gemma2.json");
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.extra.at("attn_logit_softcapping"), 2.0);
  EXPECT_EQ(c.extra.at("final_logit_softcapping"), 8.0);
  EXPECT_EQ(c.extra.at("query_pre_attn_scalar"), 16.0);
  j["final_logit_softcapping"] = nullptr;
  j["sliding_window"] = nullptr;
  const auto off = nlp::config_from_json(j, "gemma2.json");
  EXPECT_EQ(off.extra.at("final_logit_softcapping"), 0.0);
  EXPECT_FALSE(off.extra.count("sliding_window"));
  j["hidden_activation"] = "relu";
  expect_error([&] { nlp::config_from_json(j, "gemma2.json"); }, ErrorCode::kUnsupported, "hidden_activation", "relu");
  j["hidden_activation"] = "gelu_pytorch_tanh";
  j["layer_types"] = {"full_attention", "full_attention"};
  expect_error([&] { nlp::config_from_json(j, "gemma2.json"); }, ErrorCode::kUnsupported, "layer_types[0]",
               "full_attention");
}

TEST(ModelFamilies, ConvertRefusesAFamilyItDoesNotWrite) {
  // An architecture no family claims (every registered one is written now).
  const auto dir = scratch_copy("minicpm3", "unknown_arch");
  nlohmann::json cfg = read_json(dir / "config.json");
  cfg["architectures"] = {"FalconForCausalLM"};
  cfg["model_type"] = "falcon";
  write_text(dir / "config.json", cfg.dump());
  const auto out = dir / "out.gguf";
  expect_error([&] { nlp::convert_hf_to_gguf(dir, out); }, ErrorCode::kUnsupported, "FalconForCausalLM",
               "LlamaForCausalLM", "MistralForCausalLM", "MiniCPM3ForCausalLM");
  EXPECT_FALSE(std::filesystem::exists(out));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace spore::test::llm
