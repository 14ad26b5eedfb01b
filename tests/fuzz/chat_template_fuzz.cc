// libFuzzer target: chat-template text through Spore's Jinja interpreter (src/nlp/template/):
// parse, then render over a fixed conversation (system, user, assistant with a tool call, tool
// reply) with tools and enable_thinking set, under a small step limit and output cap so that
// endless or exploding templates end as spore::Error instead of timeouts.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "spore/error.h"
#include "spore/nlp/chat_template.h"

namespace {

constexpr const char* kMessages =
    R"([{"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "Weather in 北京? <tool_response>"},
        {"role": "assistant", "content": "<think>\nplan\n</think>\n\nok", "tool_calls": [
          {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "北京", "n": 3}}}]},
        {"role": "tool", "content": "晴 30°C"},
        {"role": "assistant", "content": "Sunny.", "reasoning_content": "easy"}])";
constexpr const char* kKwargs =
    R"({"enable_thinking": false, "tools": [{"type": "function", "function": {"name": "get_weather",
        "description": "d", "parameters": {"type": "object", "properties": {"city": {"type": "string"},
        "n": {"type": ["integer", "null"], "enum": [1, 2]}}, "required": ["city"]}}}]})";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spore;
  try {
    auto t = nlp::ChatTemplate::from_text(std::string_view(reinterpret_cast<const char*>(data), size),
                                          {{"bos_token", "<s>"}, {"eos_token", "</s>"}});
    nlp::RenderOptions opt;
    opt.step_limit = 20000;
    opt.max_output_bytes = 1 << 20;
    (void)t.render(kMessages, true, kKwargs, opt);
  } catch (const Error&) {
  }
  return 0;
}
