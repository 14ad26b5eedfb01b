// Chat templates (NOTE [Chat templates]): a model's Jinja prompt format, rendered byte for byte
// as Hugging Face transformers' apply_chat_template(messages, tokenize=False, ...) renders it,
// by Spore's own interpreter for the Jinja subset chat templates use.
//
//   auto t = spore::nlp::ChatTemplate::load("models/qwen3-0.6b");   // or tokenizer_config.json, .jinja
//   std::string prompt = t.render(R"([{"role":"user","content":"Hi"}])", /*add_generation_prompt=*/true,
//                                 R"({"enable_thinking": false})");
#pragma once
#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace spore::nlp {

struct RenderOptions {
  // Work units (statements, loop iterations, calls, produced items) one render may take; a
  // template that loops without end stops with a kValue error. A 20-turn Qwen3 prompt takes
  // about 2,000.
  std::size_t step_limit = 1'000'000;
  // Longest text a render may build (runaway string repetition stops with kValue).
  std::size_t max_output_bytes = std::size_t{64} << 20;
};

class ChatTemplate {
 public:
  // Template text plus the tokenizer's named special tokens ("bos_token" -> "<s>", ...), which
  // templates read as variables. This is the entry for templates from other containers (GGUF's
  // tokenizer.chat_template). Syntax errors: kFormat naming line and column; constructs outside
  // the supported subset: kUnsupported naming the construct and line.
  static ChatTemplate from_text(std::string_view text, std::map<std::string, std::string> special_tokens = {});

  // Named templates (tokenizer_config.json's list form: [{"name": "default", "template": ...}]).
  static ChatTemplate from_named(const std::vector<std::pair<std::string, std::string>>& named,
                                 std::map<std::string, std::string> special_tokens = {});

  // A tokenizer_config.json (its "chat_template", string or named list, and its special tokens),
  // a chat_template.jinja file (special tokens from a tokenizer_config.json beside it, if any),
  // a model directory holding either (chat_template.jinja wins, as in transformers), or a GGUF file.
  static ChatTemplate load(const std::filesystem::path& path);
  // A GGUF file's tokenizer.chat_template, with bos/eos/unk/pad tokens from its vocabulary (what
  // load does for a .gguf path). kFormat when the file has no template.
  static ChatTemplate load_gguf(const std::filesystem::path& path);

  // Renders `messages_json` (a JSON array of message objects) as apply_chat_template does:
  // None-valued message keys dropped, reasoning_content/thinking/reasoning aliased, special
  // tokens and `kwargs_json` (a JSON object: tools, documents, enable_thinking, ...) passed as
  // variables. Errors: kFormat for JSON that is not what it should be, kValue for what the
  // template rejects (raise_exception, undefined values it uses) or the step limit.
  std::string render(std::string_view messages_json, bool add_generation_prompt = false,
                     std::string_view kwargs_json = "{}", const RenderOptions& options = {}) const;

  const std::map<std::string, std::string>& special_tokens() const;
  // The template names when loaded from the named-list form; {"default"} otherwise.
  std::vector<std::string> names() const;

  struct Impl;

 private:
  explicit ChatTemplate(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace spore::nlp
