// Where templates come from: tokenizer_config.json (string or named list), a .jinja file, a model
// directory; special tokens read from the config as transformers' special_tokens_map has them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "spore/error.h"
#include "spore/nlp/chat_template.h"

namespace {

namespace fs = std::filesystem;
using spore::nlp::ChatTemplate;
const std::string kDir = std::string(SPORE_SOURCE_DIR) + "/tests/fixtures/templates/";
const char* kMessages = R"([{"role": "user", "content": "Hi"}])";

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("spore_template_test_" + name + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

TEST(ChatTemplateLoading, SpecialTokensFromTheConfig) {
  auto t = ChatTemplate::load(kDir + "minicpm3-4b/tokenizer_config.json");
  std::map<std::string, std::string> want = {{"bos_token", "<s>"}, {"eos_token", "<|im_end|>"}, {"unk_token", "<unk>"}};
  EXPECT_EQ(t.special_tokens(), want);  // pad_token is null there: not passed, as in transformers
}

TEST(ChatTemplateLoading, ModelDirectoryAndJinjaFile) {
  auto by_dir = ChatTemplate::load(kDir + "qwen3-0.6b");
  auto by_file = ChatTemplate::load(kDir + "qwen3-0.6b/tokenizer_config.json");
  EXPECT_EQ(by_dir.render(kMessages, true), by_file.render(kMessages, true));

  // A directory with chat_template.jinja uses it (over the config's), tokens from the config.
  fs::path d = temp_dir("dir");
  write(d / "chat_template.jinja", "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}\n");
  write(d / "tokenizer_config.json", R"({"bos_token": {"content": "<s>", "special": true}, "chat_template": "unused"})");
  EXPECT_EQ(ChatTemplate::load(d).render(kMessages), "<s>Hi");  // trailing newline dropped, as jinja2 does
  EXPECT_EQ(ChatTemplate::load(d / "chat_template.jinja").render(kMessages), "<s>Hi");
  fs::remove_all(d);
}

TEST(ChatTemplateLoading, NamedTemplatesPickToolUseWhenToolsAreGiven) {
  fs::path d = temp_dir("named");
  write(d / "tokenizer_config.json",
        R"({"chat_template": [{"name": "default", "template": "plain"}, {"name": "tool_use", "template": "tools:{{ tools|length }}"}]})");
  auto t = ChatTemplate::load(d / "tokenizer_config.json");
  EXPECT_EQ(t.names(), (std::vector<std::string>{"default", "tool_use"}));
  EXPECT_EQ(t.render(kMessages), "plain");
  EXPECT_EQ(t.render(kMessages, false, R"({"tools": [{"name": "f"}]})"), "tools:1");
  fs::remove_all(d);
}

TEST(ChatTemplateLoading, ConfigWithoutTemplateAndMissingPathsAreErrors) {
  try {
    ChatTemplate::load(kDir + "mistral-tokenizer/tokenizer_config.json");
    FAIL() << "Mistral's tokenizer_config.json has no chat_template";
  } catch (const spore::Error& e) {
    EXPECT_EQ(e.code(), spore::ErrorCode::kFormat);
    EXPECT_NE(std::string(e.what()).find("chat_template"), std::string::npos);
  }
  EXPECT_THROW(ChatTemplate::load(kDir + "no-such-dir/tokenizer_config.json"), spore::Error);
  EXPECT_THROW(ChatTemplate::load(kDir + "model.gguf"), spore::Error);
}

TEST(ChatTemplateLoading, MessagesAreNormalisedAsTransformersDoes) {
  // None-valued keys vanish; reasoning fields are aliased to thinking + reasoning_content.
  auto t = ChatTemplate::from_text(
      "{% for m in messages %}{{ m.keys()|list }}{{ m.content is defined }}{% endfor %}");
  EXPECT_EQ(t.render(R"([{"role": "assistant", "content": null, "reasoning": "r"}])"),
            "['thinking', 'role', 'reasoning', 'reasoning_content']False");
}

}  // namespace
