// Tokenizers from GGUF metadata: a byte-level "gpt2" GGUF written from Qwen3's tokenizer.json
// (tokens, merges, token types, pre "qwen2") encodes every fixture text as the tokenizer.json
// tokenizer does; bad tokenizer metadata names the key. (The "llama" kind is checked against
// llama.cpp's reference ids in tokenizer_fixture_test.cc.)
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

#include "io/gguf_test_writer.h"
#include "spore/error.h"
#include "spore/gguf.h"
#include "spore/nlp/tokenizer.h"

namespace {

using spore::GgufFile;
using spore::nlp::Tokenizer;
using spore::testing::GgufWriter;
const std::string kDir = std::string(SPORE_SOURCE_DIR) + "/tests/fixtures/tokenizers/";

GgufWriter qwen3_as_gguf(bool add_bos) {
  std::ifstream in(kDir + "qwen3/tokenizer.json");
  const auto j = nlohmann::json::parse(in);
  std::vector<std::string> tokens(j["model"]["vocab"].size() + j["added_tokens"].size());
  std::vector<int32_t> types(tokens.size(), 1);
  for (auto it = j["model"]["vocab"].begin(); it != j["model"]["vocab"].end(); ++it)
    tokens[it.value().get<size_t>()] = it.key();
  for (const auto& a : j["added_tokens"]) {
    tokens[a["id"].get<size_t>()] = a["content"];
    types[a["id"].get<size_t>()] = a["special"].get<bool>() ? 3 : 4;
  }
  std::vector<std::string> merges;
  for (const auto& m : j["model"]["merges"]) merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
  GgufWriter w;
  w.add_string("tokenizer.ggml.model", "gpt2");
  w.add_string("tokenizer.ggml.pre", "qwen2");
  w.add_strings("tokenizer.ggml.tokens", tokens);
  w.add_i32s("tokenizer.ggml.token_type", types);
  w.add_strings("tokenizer.ggml.merges", merges);
  w.add_u32("tokenizer.ggml.bos_token_id", 151643);
  w.add_u32("tokenizer.ggml.eos_token_id", 151645);
  w.add_bool("tokenizer.ggml.add_bos_token", add_bos);
  return w;
}

TEST(TokenizerGguf, Gpt2KindMatchesTokenizerJson) {
  const Tokenizer json = Tokenizer::from_file(kDir + "qwen3");
  const Tokenizer gguf = Tokenizer::from_gguf(GgufFile::from_bytes(qwen3_as_gguf(false).bytes(), "qwen3.gguf"));
  EXPECT_EQ(gguf.vocab_size(), json.vocab_size());
  EXPECT_EQ(gguf.eos_id(), 151645);
  std::ifstream in(kDir + "qwen3_cases.json");
  const auto cases = nlohmann::json::parse(in)["cases"];
  int n = 0;
  for (const auto& c : cases) {
    if (c["add_special_tokens"].get<bool>()) continue;
    const std::string text = c["text"];
    const auto want = c["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(gguf.encode(text), want) << text.substr(0, 100);
    EXPECT_EQ(gguf.decode(want), c["decoded"].get<std::string>());
    ++n;
  }
  EXPECT_GT(n, 80);
  const Tokenizer with_bos = Tokenizer::from_gguf(GgufFile::from_bytes(qwen3_as_gguf(true).bytes()));
  EXPECT_EQ(with_bos.encode("hi", true), (std::vector<int32_t>{151643, 6023}));
}

// tokenizer.ggml.pre = "smollm" (SmolLM2, issue 12's default model): a GGUF written from the
// trained tiny_smollm tokenizer.json against Hugging Face's ids for it.
TEST(TokenizerGguf, SmollmPreTokenizerMatchesHuggingFace) {
  std::ifstream in(kDir + "tiny_smollm/tokenizer.json");
  const auto j = nlohmann::json::parse(in);
  std::vector<std::string> tokens(j["model"]["vocab"].size());
  std::vector<int32_t> types(tokens.size(), 1);
  for (auto it = j["model"]["vocab"].begin(); it != j["model"]["vocab"].end(); ++it)
    tokens[it.value().get<size_t>()] = it.key();
  for (const auto& a : j["added_tokens"]) types[a["id"].get<size_t>()] = 3;
  std::vector<std::string> merges;
  for (const auto& m : j["model"]["merges"]) merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
  GgufWriter w;
  w.add_string("tokenizer.ggml.model", "gpt2");
  w.add_string("tokenizer.ggml.pre", "smollm");
  w.add_strings("tokenizer.ggml.tokens", tokens);
  w.add_i32s("tokenizer.ggml.token_type", types);
  w.add_strings("tokenizer.ggml.merges", merges);
  const Tokenizer gguf = Tokenizer::from_gguf(GgufFile::from_bytes(w.bytes(), "smollm.gguf"));
  std::ifstream cases_file(kDir + "tiny_smollm_cases.json");
  const auto fixture = nlohmann::json::parse(cases_file);  // kept alive for the loop below
  int n = 0;
  for (const auto& c : fixture["cases"]) {
    if (c["add_special_tokens"].get<bool>()) continue;
    const std::string text = c["text"];
    EXPECT_EQ(gguf.encode(text), c["ids"].get<std::vector<int32_t>>()) << text.substr(0, 100);
    EXPECT_EQ(gguf.decode(c["ids"].get<std::vector<int32_t>>()), c["decoded"].get<std::string>());
    ++n;
  }
  EXPECT_GT(n, 80);
}

TEST(TokenizerGguf, BadMetadataNamesTheKey) {
  auto load = [](const GgufWriter& w) { return Tokenizer::from_gguf(GgufFile::from_bytes(w.bytes(), "t.gguf")); };
  GgufWriter none;
  EXPECT_THROW(
      try { load(none); } catch (const spore::Error& e) {
        EXPECT_NE(std::string(e.what()).find("tokenizer.ggml.model"), std::string::npos);
        throw;
      },
      spore::Error);
  GgufWriter rwkv;  // a kind this build does not read
  rwkv.add_string("tokenizer.ggml.model", "rwkv");
  try {
    load(rwkv);
    ADD_FAILURE();
  } catch (const spore::Error& e) {
    EXPECT_EQ(e.code(), spore::ErrorCode::kUnsupported);
  }
  GgufWriter scores;
  scores.add_string("tokenizer.ggml.model", "llama");
  scores.add_strings("tokenizer.ggml.tokens", {"<unk>", "a", "b"});
  scores.add_f32s("tokenizer.ggml.scores", {0, 1});
  try {
    load(scores);
    ADD_FAILURE();
  } catch (const spore::Error& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.ggml.scores has 2 entries for 3"), std::string::npos) << e.what();
  }
  GgufWriter merges = GgufWriter();
  merges.add_string("tokenizer.ggml.model", "gpt2");
  merges.add_strings("tokenizer.ggml.tokens", {"a", "b"});
  merges.add_strings("tokenizer.ggml.merges", {"a b"});
  try {
    load(merges);
    ADD_FAILURE();
  } catch (const spore::Error& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.ggml.merges[0]"), std::string::npos) << e.what();
  }
  GgufWriter bos;
  bos.add_string("tokenizer.ggml.model", "llama");
  bos.add_strings("tokenizer.ggml.tokens", {"<unk>", "a"});
  bos.add_u32("tokenizer.ggml.bos_token_id", 9);
  try {
    load(bos);
    ADD_FAILURE();
  } catch (const spore::Error& e) {
    EXPECT_NE(std::string(e.what()).find("bos_token_id' is 9"), std::string::npos) << e.what();
  }
}

}  // namespace
