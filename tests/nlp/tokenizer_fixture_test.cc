// Parity with Hugging Face `tokenizers`: every case of the committed fixtures (ids and decoded
// text, with and without special tokens), written by tools/make_tokenizer_fixtures.py from the
// real Qwen3 and Mistral tokenizer.json files; and the Llama 2 vocab-only GGUF against
// llama.cpp's reference ids (ggml-vocab-llama-spm.gguf.out).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "spore/gguf.h"
#include "spore/nlp/tokenizer.h"

namespace {

using spore::nlp::Tokenizer;
const std::string kDir = std::string(SPORE_SOURCE_DIR) + "/tests/fixtures/tokenizers/";

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const Tokenizer& tokenizer(const std::string& name) {
  static std::map<std::string, Tokenizer> cache;
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, Tokenizer::from_file(kDir + name)).first;
  return it->second;
}

void check_all_cases(const std::string& name) {
  const Tokenizer& tok = tokenizer(name);
  const auto fixture = nlohmann::json::parse(read_text(kDir + name + "_cases.json"));
  int checked = 0, failed = 0;
  for (const auto& c : fixture.at("cases")) {
    const std::string text = c.at("text");
    const bool add = c.at("add_special_tokens");
    const std::vector<int32_t> want = c.at("ids").get<std::vector<int32_t>>();
    const std::vector<int32_t> got = tok.encode(text, add);
    const std::string decoded = tok.decode(want);
    const std::string skipped = tok.decode(want, /*skip_special_tokens=*/true);
    ++checked;
    if (got != want || decoded != c.at("decoded").get<std::string>() ||
        skipped != c.at("decoded_skip_special").get<std::string>()) {
      if (++failed <= 10) {
        ADD_FAILURE() << name << " case " << checked << " add_special=" << add << " text='"
                      << text.substr(0, 200) << "'\n got  " << nlohmann::json(got).dump().substr(0, 400)
                      << "\n want " << nlohmann::json(want).dump().substr(0, 400)
                      << "\n decoded '" << decoded.substr(0, 200) << "'\n want    '"
                      << c.at("decoded").get<std::string>().substr(0, 200) << "'\n skipped '"
                      << skipped.substr(0, 200) << "'\n want    '"
                      << c.at("decoded_skip_special").get<std::string>().substr(0, 200) << "'";
      } else {
        ADD_FAILURE() << name << " case " << checked;
      }
    }
  }
  EXPECT_GT(checked, 150);
}

TEST(TokenizerFixture, Qwen3AllCasesMatchHuggingFace) { check_all_cases("qwen3"); }
TEST(TokenizerFixture, MistralAllCasesMatchHuggingFace) { check_all_cases("mistral"); }
// A small trained byte-level BPE with NFKC + Lowercase and added tokens of every flag (lstrip,
// rstrip, single_word, normalized, special) and a TemplateProcessing post-processor.
TEST(TokenizerFixture, AddedTokenFlagsMatchHuggingFace) { check_all_cases("tiny"); }
// Metaspace pre-tokenizer and decoder (prepend_scheme "first"), NFKC, byte fallback, fused unk.
TEST(TokenizerFixture, MetaspaceByteFallbackMatchesHuggingFace) { check_all_cases("tiny_metaspace"); }
// Split in every behaviour (one inverted), Digits, NFD/Strip/Replace(regex)/Lowercase, char-level
// BPE with unk and no decoder.
TEST(TokenizerFixture, SplitBehavioursAndNormalizersMatchHuggingFace) { check_all_cases("tiny_split"); }
// SmolLM2's structure: Digits one by one, ByteLevel with GPT-2's regex.
TEST(TokenizerFixture, DigitsAndByteLevelRegexMatchHuggingFace) { check_all_cases("tiny_smollm"); }

TEST(TokenizerFixture, Llama2GgufMatchesLlamaCppReference) {
  const std::string base = kDir + "llama2-gguf/ggml-vocab-llama-spm.gguf";
  const Tokenizer tok = Tokenizer::from_file(base);
  std::string inp = read_text(base + ".inp");
  const std::string out = read_text(base + ".out");
  std::vector<std::string> texts;
  const std::string sep = "\n__ggml_vocab_test__\n";
  size_t pos = 0;
  while (true) {
    size_t next = inp.find(sep, pos);
    if (next == std::string::npos) {
      texts.push_back(inp.substr(pos));
      break;
    }
    texts.push_back(inp.substr(pos, next - pos));
    pos = next + sep.size();
  }
  std::vector<std::vector<int32_t>> refs;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream nums(line);
    std::vector<int32_t> ids;
    int32_t v;
    while (nums >> v) ids.push_back(v);
    refs.push_back(ids);
  }
  // The .inp ends with a separator (so its last part is empty); .out has one line per text.
  ASSERT_EQ(texts.size(), refs.size() + 1);
  ASSERT_TRUE(texts.back().empty());
  ASSERT_EQ(refs.size(), 46u);
  for (size_t k = 0; k < refs.size() && k < texts.size(); ++k)
    EXPECT_EQ(tok.encode(texts[k]), refs[k]) << "text " << k << ": '" << texts[k] << "'";
  EXPECT_EQ(tok.token_to_id("\xE2\x96\x81Hello"), 15043);
  EXPECT_EQ(tok.encode("Hello", true).front(), 1);  // add_bos_token
}

}  // namespace
