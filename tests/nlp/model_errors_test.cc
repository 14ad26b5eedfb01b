// Bad artifacts and bad requests give typed errors naming the file, field, tensor or chunk.
#include <gtest/gtest.h>

#include "model_test_util.h"
#include "spore/gguf.h"
#include "spore/artifact_lock.h"
#include "test_util.h"

namespace spore::test::llm {
namespace {

namespace fs = std::filesystem;

void edit_config(const fs::path& dir, const std::function<void(nlohmann::json&)>& edit) {
  auto j = read_json(dir / "config.json");
  edit(j);
  write_text(dir / "config.json", j.dump(1));
}

TEST(ModelErrors, MissingConfigField) {
  const auto dir = scratch_copy("llama", "missing_field");
  edit_config(dir, [](auto& j) { j.erase("num_hidden_layers"); });
  expect_error([&] { nlp::load_model(dir); }, ErrorCode::kFormat, "config.json", "num_hidden_layers");
  fs::remove_all(dir);
}

TEST(ModelErrors, ContradictoryConfig) {
  const auto dir = scratch_copy("llama", "contradiction");
  edit_config(dir, [](auto& j) { j["num_key_value_heads"] = 3; });
  expect_error([&] { nlp::load_model(dir); }, ErrorCode::kFormat, "config.json", "num_key_value_heads");
  edit_config(dir, [](auto& j) {
    j["num_key_value_heads"] = 2;
    j["vocab_size"] = "many";
  });
  expect_error([&] { nlp::load_model(dir); }, ErrorCode::kFormat, "vocab_size", "integer");
  edit_config(dir, [](auto& j) {
    j["vocab_size"] = 256;
    j["model_type"] = "gpt2";
    j["architectures"] = {"GPT2LMHeadModel"};
  });
  expect_error([&] { nlp::load_model(dir); }, ErrorCode::kUnsupported, "gpt2", "llama, qwen2, qwen3, minicpm3");
  fs::remove_all(dir);
}

TEST(ModelErrors, ShapeDisagreesWithConfig) {
  const auto dir = scratch_copy("qwen2", "shape");
  edit_config(dir, [](auto& j) { j["intermediate_size"] = 48; });
  expect_error([&] { nlp::load_model(dir); }, ErrorCode::kShape, "mlp.gate_proj.weight", "[64, 32]", "[48, 32]");
  fs::remove_all(dir);
}

TEST(ModelErrors, MissingTensor) {
  const auto dir = scratch_copy("qwen3", "missing_tensor");
  auto st = load_safetensors(dir / "model.safetensors");
  std::vector<std::pair<std::string, Tensor>> kept;
  for (const auto& [name, t] : st.tensors)
    if (name != "model.layers.1.self_attn.k_norm.weight") kept.emplace_back(name, t);
  save_safetensors(dir / "model.safetensors", kept);
  expect_error([&] { nlp::load_model(dir); }, ErrorCode::kFormat, "model.layers.1.self_attn.k_norm.weight");
  // An untied model without its head names the head.
  const auto l = scratch_copy("llama", "missing_head");
  auto lt = load_safetensors(l / "model.safetensors");
  std::vector<std::pair<std::string, Tensor>> no_head;
  for (const auto& [name, t] : lt.tensors)
    if (name != "lm_head.weight") no_head.emplace_back(name, t);
  save_safetensors(l / "model.safetensors", no_head);
  expect_error([&] { nlp::load_model(l); }, ErrorCode::kFormat, "lm_head.weight");
  fs::remove_all(dir);
  fs::remove_all(l);
}

TEST(ModelErrors, TruncatedSafetensors) {
  const auto dir = scratch_copy("llama", "truncated");
  fs::resize_file(dir / "model.safetensors", fs::file_size(dir / "model.safetensors") - 100);
  expect_error([&] { nlp::load_model(dir); }, ErrorCode::kFormat, "model.safetensors");
  fs::remove(dir / "model.safetensors");
  expect_error([&] { nlp::load_model(dir); }, ErrorCode::kIO, "model.safetensors");
  fs::remove_all(dir);
}

TEST(ModelErrors, ShardIndex) {
  const auto dir = scratch_copy("qwen2", "index");
  write_text(dir / "model.safetensors.index.json", R"({"weight_map": {"model.norm.weight": "../x.safetensors"}})");
  expect_error([&] { nlp::load_model(dir); }, ErrorCode::kFormat, "model.safetensors.index.json", "plain file name");
  write_text(dir / "model.safetensors.index.json", R"({"weight_map": {"model.norm.weight": "model.safetensors", "extra.weight": "model.safetensors"}})");
  expect_error([&] { nlp::load_model(dir); }, ErrorCode::kFormat, "extra.weight");
  write_text(dir / "model.safetensors.index.json", R"({"metadata": {}})");
  expect_error([&] { nlp::load_model(dir); }, ErrorCode::kFormat, "weight_map");
  fs::remove_all(dir);
}

// A model split over two shards (the index form) loads and gives the same logits.
TEST(ModelSharded, TwoShardsLoad) {
  const auto dir = scratch_copy("qwen2", "sharded");
  auto st = load_safetensors(dir / "model.safetensors");
  std::vector<std::pair<std::string, Tensor>> a, b;
  nlohmann::json index;
  for (const auto& [name, t] : st.tensors) {
    const bool first = name.find("layers.1.") == std::string::npos;
    (first ? a : b).emplace_back(name, t);
    index["weight_map"][name] = first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
  }
  fs::remove(dir / "model.safetensors");
  save_safetensors(dir / "model-00001-of-00002.safetensors", a);
  save_safetensors(dir / "model-00002-of-00002.safetensors", b);
  write_text(dir / "model.safetensors.index.json", index.dump());
  const Reference ref = load_reference("qwen2");
  const auto m = nlp::load_model(dir);
  auto cache = m.lm->make_cache(1, 8, DType::kFloat32);
  nlp::SequenceChunk c{0, 0, ref.prompts[0], true};
  EXPECT_LT(logits_diff(m.lm->forward({&c, 1}, *cache), ref.logits.at("logits_0")), 1e-4);
  fs::remove_all(dir);
}

TEST(ModelErrors, BadRequests) {
  const auto m = nlp::load_model(fixture_model("llama", true));
  auto cache = m.lm->make_cache(2, 8, DType::kFloat32);
  const std::vector<int32_t> bad_id{1, 256}, ok{1, 2, 3}, nine(9, 1);
  nlp::SequenceChunk c{0, 0, bad_id};
  expect_error([&] { m.lm->forward({&c, 1}, *cache); }, ErrorCode::kValue, "chunk 0", "token id 256", "[0, 256)");
  c = {0, 6, ok};
  expect_error([&] { m.lm->forward({&c, 1}, *cache); }, ErrorCode::kValue, "chunk 0", "context of 8");
  c = {0, 0, nine};
  expect_error([&] { m.lm->forward({&c, 1}, *cache); }, ErrorCode::kValue, "context of 8");
  c = {2, 0, ok};
  expect_error([&] { m.lm->forward({&c, 1}, *cache); }, ErrorCode::kValue, "slot 2", "2 slot(s)");
  nlp::SequenceChunk twice[2] = {{1, 0, ok}, {1, 0, ok}};
  expect_error([&] { m.lm->forward(twice, *cache); }, ErrorCode::kValue, "chunk 1", "twice");
  expect_error([&] { m.lm->make_cache(1, 65); }, ErrorCode::kValue, "65", "64");
  // A cache of another model is refused.
  const auto q = nlp::load_model(fixture_model("qwen3", true));
  auto other = q.lm->make_cache(1, 8, DType::kFloat32);
  c = {0, 0, ok};
  expect_error([&] { m.lm->forward({&c, 1}, *other); }, ErrorCode::kValue, "make_cache");
}

TEST(ModelErrors, MissingPaths) {
  expect_error([&] { nlp::load_model("/nonexistent/model"); }, ErrorCode::kIO, "/nonexistent/model", "fetch-model.sh");
  const auto dir = fs::temp_directory_path() / ("spore_model_empty_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  expect_error([&] { nlp::load_model(dir); }, ErrorCode::kFormat, "config.json", ".gguf");
  fs::remove_all(dir);
}

// The real configs of the chapter's models (copied from ../shared/data/models, transformers 4.x
// spelling: rope_theta + rope_scaling) parse to the figures their model cards give.
TEST(ModelConfig, RealConfigs) {
  const fs::path d = fs::path(SPORE_SOURCE_DIR) / "tests" / "fixtures" / "llm" / "configs";
  const auto smol = nlp::ModelConfig::from_hf_json(d / "smollm2-135m-instruct" / "config.json");
  EXPECT_EQ(smol.family, "llama");
  EXPECT_EQ(smol.head_dim, 64);
  EXPECT_EQ(smol.num_kv_heads, 3);
  EXPECT_TRUE(smol.tie_word_embeddings);
  EXPECT_EQ(smol.rope_theta, 100000);
  EXPECT_EQ(smol.eos_ids, std::vector<int32_t>{2});
  const auto qwen = nlp::ModelConfig::from_hf_json(d / "qwen2.5-0.5b-instruct" / "config.json");
  EXPECT_EQ(qwen.family, "qwen2");
  EXPECT_TRUE(qwen.attention_bias);
  EXPECT_EQ(qwen.head_dim, 64);
  EXPECT_EQ(qwen.eos_ids, (std::vector<int32_t>{151645, 151643}));  // generation_config.json's list
  const auto q3 = nlp::ModelConfig::from_hf_json(d / "qwen3-0.6b" / "config.json");
  EXPECT_EQ(q3.family, "qwen3");
  EXPECT_EQ(q3.head_dim, 128);  // not 1024 / 16
  EXPECT_TRUE(q3.qk_norm);
  const auto tl = nlp::ModelConfig::from_hf_json(d / "tinyllama-1.1b-chat-v1.0" / "config.json");
  EXPECT_FALSE(tl.tie_word_embeddings);
  EXPECT_EQ(tl.num_kv_heads, 4);
}

// Rope tables: llama3 bands, linear, against closed forms.
TEST(ModelConfig, RopeScaling) {
  const auto c = nlp::ModelConfig::from_hf_json(fixture_model("llama", false) / "config.json");
  EXPECT_EQ(c.rope_scaling.type, "llama3");
  EXPECT_EQ(c.rope_scaling.original_max_position, 16);
  const auto g = nlp::ModelConfig::from_gguf(GgufFile(fixture_model("llama", true)));
  EXPECT_EQ(g.rope_scaling.type, "");  // GGUF carries it as rope_freqs.weight instead
}

}  // namespace
}  // namespace spore::test::llm

namespace spore::test::llm {
namespace {

// A lock beside the artifact pins it: a changed file refuses to load unless the caller overrides,
// and the override is recorded.
TEST(ModelLock, MismatchRefusedUnlessOverridden) {
  const auto dir = scratch_copy("qwen3", "lock");
  write_artifact_lock(dir / "spore.lock.json",
                      make_artifact_lock(dir, {"config.json", "model.safetensors"}, "tiny-qwen3", "fixture", "v1"));
  const auto ok = nlp::load_model(dir);
  ASSERT_TRUE(ok.verification.has_value());
  EXPECT_TRUE(ok.verification->ok());
  EXPECT_FALSE(ok.verification_overridden);
  // Same size, different bytes: a float of the last tensor changes.
  auto bytes = read_file_bytes(dir / "model.safetensors");
  bytes[bytes.size() - 2] ^= 0x40;
  atomic_write_file(dir / "model.safetensors", bytes);
  expect_error([&] { nlp::load_model(dir); }, ErrorCode::kFormat, "model.safetensors");
  nlp::LoadOptions o;
  o.allow_unverified = true;
  const auto forced = nlp::load_model(dir, o);
  EXPECT_TRUE(forced.verification_overridden);
  EXPECT_FALSE(forced.verification->ok());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace spore::test::llm
