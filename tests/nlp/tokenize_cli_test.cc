// The command-line forms of issue 11, run as a script would run them: `spore tokenize PATH --text`
// and `--batch` print JSON arrays of ids, `spore detokenize PATH --ids` prints the text and
// nothing else. Reference ids: the Hugging Face fixture cases.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

const std::string kSpore = std::string(SPORE_BINARY_DIR) + "/bin/spore";
const std::string kDir = std::string(SPORE_SOURCE_DIR) + "/tests/fixtures/tokenizers/";

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs a command; returns stdout and sets *status to the exit status.
std::string run(const std::string& cmd, int* status) {
  FILE* p = popen((cmd + " 2>/dev/null").c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  *status = WEXITSTATUS(pclose(p));
  return out;
}

nlohmann::json cases(const std::string& name) {
  std::ifstream in(kDir + name + "_cases.json");
  return nlohmann::json::parse(in)["cases"];
}

// Each run loads the tokenizer (the Qwen3 file is 11 MB), so the per-text forms go through the
// smaller Mistral file and the Qwen3 file is loaded once per form.
TEST(TokenizeCli, TextBatchAndDetokenizeMatchHuggingFace) {
  ASSERT_TRUE(std::filesystem::exists(kSpore)) << "build spore_cli first";
  int status = 0;
  auto ids_arg = [](const nlohmann::json& ids) {
    std::string s;
    for (const auto& id : ids) {
      if (!s.empty()) s += ',';
      s += std::to_string(id.get<int>());
    }
    return s;
  };
  int n = 0;
  for (const auto& c : cases("mistral")) {
    const std::string text = c["text"];
    if (!c["add_special_tokens"].get<bool>() || text.empty() || text.size() > 200 || n >= 4) continue;
    const std::string out = run(kSpore + " tokenize " + kDir + "mistral --text " + quote(text) + " --add-special-tokens", &status);
    EXPECT_EQ(status, 0);
    EXPECT_EQ(nlohmann::json::parse(out), c["ids"]) << text;
    EXPECT_EQ(run(kSpore + " detokenize " + kDir + "mistral/tokenizer.json --ids " + ids_arg(c["ids"]), &status),
              c["decoded"].get<std::string>());
    EXPECT_EQ(status, 0);
    ++n;
  }
  ASSERT_EQ(n, 4);
  std::vector<std::string> batch;
  nlohmann::json want = nlohmann::json::array();
  nlohmann::json all_ids = nlohmann::json::array();
  std::string all_text;
  for (const auto& c : cases("qwen3")) {
    if (!c["add_special_tokens"].get<bool>()) continue;
    batch.push_back(c["text"]);
    want.push_back(c["ids"]);
  }
  const auto file = std::filesystem::temp_directory_path() / "spore_tokenize_batch.json";
  std::ofstream(file) << nlohmann::json(batch).dump();
  const std::string out = run(kSpore + " tokenize " + kDir + "qwen3 --batch " + file.string() + " --add-special-tokens", &status);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(nlohmann::json::parse(out), want);  // every case, in order
  std::filesystem::remove(file);
  const auto c = cases("qwen3")[40];
  EXPECT_EQ(run(kSpore + " detokenize " + kDir + "qwen3 --ids " + ids_arg(c["ids"]), &status),
            c["decoded"].get<std::string>());
}

TEST(TokenizeCli, GgufPathAndErrors) {
  ASSERT_TRUE(std::filesystem::exists(kSpore)) << "build spore_cli first";
  int status = 0;
  const std::string gguf = kDir + "llama2-gguf/ggml-vocab-llama-spm.gguf";
  EXPECT_EQ(nlohmann::json::parse(run(kSpore + " tokenize " + gguf + " --text 'Hello world'", &status)),
            nlohmann::json({15043, 3186}));
  EXPECT_EQ(run(kSpore + " detokenize " + gguf + " --ids 1,15043,3186", &status), "<s> Hello world");
  run(kSpore + " detokenize " + gguf + " --ids 1,32000", &status);
  EXPECT_EQ(status, 2);  // kValue: id outside the vocabulary
  run(kSpore + " tokenize " + gguf, &status);
  EXPECT_EQ(status, 2);  // neither --text nor --batch
  run(kSpore + " tokenize " + gguf + " --text a --batch b.json", &status);
  EXPECT_EQ(status, 2);
}

}  // namespace
