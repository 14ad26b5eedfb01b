// spore template PATH --messages FILE.json [--add-generation-prompt] [--kwargs JSON]
// Prints the rendered prompt exactly as transformers' apply_chat_template(tokenize=False) gives
// it, with no newline added (NOTE [Chat templates]); scripts compare it byte for byte.
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "commands.h"
#include "spore/error.h"
#include "spore/nlp/chat_template.h"

namespace spore::cli {

void add_template_command(CLI::App& app, Handlers& h, const std::vector<std::string>& /*command*/) {
  auto* cmd = add_command(app, "template",
                          "Render a chat template over messages, exactly as transformers' apply_chat_template",
                          "spore template models/qwen3-0.6b --messages chat.json --add-generation-prompt "
                          "--kwargs '{\"enable_thinking\": false}'");
  auto path = std::make_shared<std::string>();
  auto messages = std::make_shared<std::string>();
  auto kwargs = std::make_shared<std::string>("{}");
  auto agp = std::make_shared<bool>(false);
  cmd->add_option("path", *path, "tokenizer_config.json, a .jinja file or a model directory")->required();
  cmd->add_option("--messages", *messages, "JSON file: an array of {\"role\", \"content\", ...} messages")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_flag("--add-generation-prompt", *agp, "End with the prompt that starts the assistant's turn");
  cmd->add_option("--kwargs", *kwargs, "JSON object of extra template variables (tools, enable_thinking, ...)");
  cmd->callback([&h, path, messages, kwargs, agp] {
    h.action = [path, messages, kwargs, agp] {
      std::ifstream f(*messages, std::ios::binary);
      if (!f) throw Error(ErrorCode::kIO, "cannot read the messages file " + *messages);
      std::stringstream text;
      text << f.rdbuf();
      auto tmpl = nlp::ChatTemplate::load(*path);
      std::string out = tmpl.render(text.str(), *agp, *kwargs);
      std::fwrite(out.data(), 1, out.size(), stdout);
      return 0;
    };
  });
}

}  // namespace spore::cli
