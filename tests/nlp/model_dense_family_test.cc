// Bad input for the dense families of issue 27 item 4 (gemma, gemma3, phi3, granite, olmo2 and
// gemma2's GGUF; NOTE [Model families]): contradictory or unsupported config.json fields and GGUF
// keys get a typed error naming the field, and a GGUF missing a tensor (or holding a fused tensor
// of the wrong shape) one naming the tensor, never a crash or a silently different model.
#include <gtest/gtest.h>

#include <map>
#include <optional>

#include "model_test_util.h"
#include "nlp/model_internal.h"
#include "spore/gguf.h"
#include "spore/gguf_writer.h"
#include "spore/nlp/convert.h"
#include "test_util.h"

namespace spore::test::llm {
namespace {

nlohmann::json config_of(const std::string& family) { return read_json(fixture_model(family, false) / "config.json"); }

TEST(DenseFamilies, Gemma3ConfigIsChecked) {
  nlohmann::json j = config_of("gemma3");
  const auto ok = nlp::config_from_json(j, "gemma3.json");
  EXPECT_EQ(ok.family, "gemma3");
  EXPECT_EQ(ok.extra.at("sliding_window_pattern"), 2);
  EXPECT_EQ(ok.extra.at("rope_local_base_freq"), 10000.0);
  EXPECT_EQ(ok.rope_theta, 1000000.0);
  auto bad = [&](auto edit, ErrorCode code, const char* a, const char* b) {
    nlohmann::json k = j;
    edit(k);
    expect_error([&] { nlp::config_from_json(k, "gemma3.json"); }, code, a, b);
  };
  bad([](auto& k) { k["layer_types"].push_back("full_attention"); }, ErrorCode::kFormat, "layer_types",
      "num_hidden_layers");
  bad([](auto& k) { k["layer_types"][1] = "chunked_attention"; }, ErrorCode::kFormat, "layer_types[1]", "chunked");
  // Full first, then sliding: no pattern llama.cpp (or this file) describes.
  bad([](auto& k) { k["layer_types"] = {"full_attention", "sliding_attention"}; }, ErrorCode::kUnsupported,
      "layer_types", "pattern");
  bad([](auto& k) { k["rope_parameters"]["sliding_attention"]["rope_type"] = "yarn"; }, ErrorCode::kUnsupported,
      "sliding_attention", "yarn");
  bad([](auto& k) { k["hidden_activation"] = "relu"; }, ErrorCode::kUnsupported, "hidden_activation", "relu");
  bad([](auto& k) { k["query_pre_attn_scalar"] = 0; }, ErrorCode::kFormat, "query_pre_attn_scalar", "positive");
  // No window: the layers keep their kinds (and rope bases), none slides.
  j["sliding_window"] = nullptr;
  const auto open = nlp::config_from_json(j, "gemma3.json");
  EXPECT_FALSE(open.extra.count("sliding_window"));
  EXPECT_EQ(open.extra.at("sliding_window_pattern"), 2);
}

TEST(DenseFamilies, Phi3ConfigIsChecked) {
  nlohmann::json j = config_of("phi3");
  const auto ok = nlp::config_from_json(j, "phi3.json");
  EXPECT_EQ(ok.rope_scaling.type, "longrope");
  EXPECT_EQ(ok.rope_scaling.original_max_position, 256);
  nlohmann::json k = j;
  k["rope_parameters"]["partial_rotary_factor"] = 0.75;
  expect_error([&] { nlp::config_from_json(k, "phi3.json"); }, ErrorCode::kUnsupported, "partial_rotary_factor", "0.75");
  k = j;
  k["rope_parameters"]["short_factor"] = {1.0, 2.0, 3.0};
  expect_error([&] { nlp::config_from_json(k, "phi3.json"); }, ErrorCode::kFormat, "short_factor", "4 entries");
  // The old spelling of LongRoPE reads as it.
  k = j;
  k["rope_parameters"]["rope_type"] = "su";
  EXPECT_EQ(nlp::config_from_json(k, "phi3.json").rope_scaling.type, "longrope");
}

TEST(DenseFamilies, GraniteMultipliersAreChecked) {
  nlohmann::json j = config_of("granite");
  const auto ok = nlp::config_from_json(j, "granite.json");
  EXPECT_EQ(ok.extra.at("embedding_multiplier"), 3.0);
  EXPECT_EQ(ok.extra.at("attention_multiplier"), 0.2);
  for (const char* key : {"logits_scaling", "residual_multiplier", "embedding_multiplier"}) {
    nlohmann::json k = j;
    k[key] = key[0] == 'l' ? 0.0 : -1.0;
    expect_error([&] { nlp::config_from_json(k, "granite.json"); }, ErrorCode::kFormat, key, "positive");
  }
}

TEST(DenseFamilies, Olmo2RefusesOlmo3Windows) {
  nlohmann::json j = config_of("olmo2");
  EXPECT_TRUE(nlp::config_from_json(j, "olmo2.json").qk_norm);
  j["sliding_window"] = 4;
  expect_error([&] { nlp::config_from_json(j, "olmo2.json"); }, ErrorCode::kUnsupported, "sliding_window", "OLMo 3");
}

// spore convert checks what it writes from config.json: LongRoPE factors of the wrong length are
// named, and nothing is written.
TEST(DenseFamilies, ConvertNamesBadLongRopeFactors) {
  for (const char* family : {"phi3", "minicpm3"}) {
    const auto dir = scratch_copy(family, "bad_factors");
    nlohmann::json cfg = read_json(dir / "config.json");
    cfg["rope_parameters"]["long_factor"] = {1.0, 2.0, 3.0};
    write_text(dir / "config.json", cfg.dump());
    const auto out = dir / "out.gguf";
    expect_error([&] { nlp::convert_hf_to_gguf(dir, out); }, ErrorCode::kFormat, "long_factor", "4 entries");
    EXPECT_FALSE(std::filesystem::exists(out)) << family;
    std::filesystem::remove_all(dir);
  }
}

// A copy of a family's llama.cpp GGUF without one tensor and with some keys replaced (nullopt:
// removed), written to a scratch file.
std::filesystem::path edited_gguf(const std::string& family, const std::string& drop,
                                  const std::map<std::string, std::optional<GgufValue>>& keys) {
  const GgufFile g(fixture_dir(family) / "model-llama-cpp.gguf");
  GgufWriter w;
  for (const auto& [k, v] : g.metadata()) {
    if (k == "general.alignment") continue;
    if (auto it = keys.find(k); it != keys.end()) {
      if (it->second) w.set(k, *it->second);
    } else {
      w.set(k, v);
    }
  }
  for (const auto& [k, v] : keys)
    if (v && !g.contains(k)) w.set(k, *v);
  for (const auto& t : g.tensors()) {
    if (t.name == drop) continue;
    const auto bytes = g.tensor_bytes(t.name);
    w.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(bytes.begin(), bytes.end()));
  }
  const auto out = std::filesystem::temp_directory_path() /
                   ("spore_dense_" + family + "_" + std::to_string(::getpid()) + ".gguf");
  w.write(out);
  return out;
}

TEST(DenseFamilies, MissingTensorsAreNamed) {
  const std::vector<std::pair<std::string, std::string>> cases = {{"phi3", "blk.1.attn_qkv.weight"},
                                                                  {"phi3", "blk.0.ffn_up.weight"},
                                                                  {"olmo2", "blk.0.post_ffw_norm.weight"},
                                                                  {"olmo2", "blk.1.attn_k_norm.weight"},
                                                                  {"gemma3", "blk.0.attn_q_norm.weight"},
                                                                  {"gemma2", "blk.1.post_attention_norm.weight"},
                                                                  {"granite", "blk.0.ffn_gate.weight"}};
  for (const auto& [family, tensor] : cases) {
    const auto path = edited_gguf(family, tensor, {});
    expect_error([&] { nlp::load_model(path); }, ErrorCode::kFormat, tensor, path.filename().string());
    std::filesystem::remove(path);
  }
}

TEST(DenseFamilies, ContradictoryGgufKeysAreNamed) {
  // Fewer kv heads than the fused projection holds: its shape, named.
  auto path = edited_gguf("phi3", "", {{"phi3.attention.head_count_kv", gguf_uint(GgufType::kUInt32, 1)}});
  expect_error([&] { nlp::load_model(path); }, ErrorCode::kShape, "blk.0.attn_qkv.weight");
  // LongRoPE factors without the original context they switch at.
  path = edited_gguf("phi3", "", {{"phi3.rope.scaling.original_context_length", std::nullopt}});
  expect_error([&] { nlp::load_model(path); }, ErrorCode::kFormat, "original_context_length");
  // One sliding flag per layer, or none.
  path = edited_gguf("gemma3", "", {{"gemma3.attention.sliding_window_pattern",
                                     gguf_array(GgufType::kBool, {gguf_bool(true), gguf_bool(false), gguf_bool(true)})}});
  expect_error([&] { nlp::load_model(path); }, ErrorCode::kFormat, "sliding_window_pattern", "3 flags");
  path = edited_gguf("gemma2", "", {{"gemma2.attention.sliding_window_pattern", gguf_uint(GgufType::kUInt32, 3)}});
  expect_error([&] { nlp::load_model(path); }, ErrorCode::kUnsupported, "sliding_window_pattern", "alternating");
  path = edited_gguf("olmo2", "", {{"olmo2.attention.sliding_window", gguf_uint(GgufType::kUInt32, 4)}});
  expect_error([&] { nlp::load_model(path); }, ErrorCode::kUnsupported, "sliding_window", "OLMo 3");
  std::filesystem::remove(path);
}

// A gemma3 GGUF whose pattern key says what config.json said (spore convert writes it) runs as
// transformers does; llama.cpp's converter's file (no key) runs llama.cpp's default pattern.
TEST(DenseFamilies, Gemma3GgufPatternKeyIsRead) {
  const auto path = edited_gguf("gemma3", "", {{"gemma3.attention.sliding_window_pattern", gguf_uint(GgufType::kUInt32, 2)}});
  const auto m = nlp::load_model(path);
  const Reference ref = load_reference("gemma3");
  auto cache = m.lm->make_cache(1, (int64_t)ref.prompts[2].size(), DType::kFloat32);
  nlp::SequenceChunk c{0, 0, ref.prompts[2], true};
  EXPECT_LT(logits_diff(m.lm->forward({&c, 1}, *cache), ref.logits.at("logits_2")), 1e-4);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace spore::test::llm
