// Where templates come from: tokenizer_config.json (string or named list), a .jinja file, a model
// directory; special tokens read from the config as transformers' special_tokens_map has them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "spore/error.h"
#include "io/gguf_test_writer.h"
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

// GGUF: the template and the special tokens come from the file's metadata (llama.cpp's keys);
// the rendering equals the same template and tokens given as text.
TEST(ChatTemplateLoading, GgufTemplateAndSpecialTokens) {
  const std::string text =
      "{{ bos_token }}{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{{ eos_token }}{% endfor %}"
      "{% if add_generation_prompt %}<|assistant|>{% endif %}";
  spore::testing::GgufWriter w;
  w.add_string("general.architecture", "llama");
  w.add_strings("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "hi"});
  w.add_u32("tokenizer.ggml.bos_token_id", 1);
  w.add_u32("tokenizer.ggml.eos_token_id", 2);
  w.add_u32("tokenizer.ggml.unknown_token_id", 0);
  w.add_string("tokenizer.chat_template", text);
  fs::path d = temp_dir("gguf");
  const auto bytes = w.bytes();
  std::ofstream(d / "m.gguf", std::ios::binary).write((const char*)bytes.data(), (std::streamsize)bytes.size());
  auto t = ChatTemplate::load(d / "m.gguf");
  std::map<std::string, std::string> want = {{"bos_token", "<s>"}, {"eos_token", "</s>"}, {"unk_token", "<unk>"}};
  EXPECT_EQ(t.special_tokens(), want);
  EXPECT_EQ(t.render(kMessages, true), "<s><|user|>Hi</s><|assistant|>");
  EXPECT_EQ(t.render(kMessages, true), ChatTemplate::from_text(text, want).render(kMessages, true));

  spore::testing::GgufWriter none;
  none.add_string("general.architecture", "llama");
  const auto b2 = none.bytes();
  std::ofstream(d / "none.gguf", std::ios::binary).write((const char*)b2.data(), (std::streamsize)b2.size());
  try {
    ChatTemplate::load(d / "none.gguf");
    ADD_FAILURE() << "a GGUF without a template loaded";
  } catch (const spore::Error& e) {
    EXPECT_EQ(e.code(), spore::ErrorCode::kFormat);
    EXPECT_NE(std::string(e.what()).find("no tokenizer.chat_template"), std::string::npos) << e.what();
  }
  fs::remove_all(d);
}
