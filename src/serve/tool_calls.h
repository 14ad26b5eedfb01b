// Tool calls in a model's answer, as OpenAI's `tool_calls`: Qwen/Hermes markup
// (<tool_call>{"name": ..., "arguments": {...}}</tool_call>, any number) and Llama 3's JSON form
// (the whole answer one {"name": ..., "parameters": {...}} object, after an optional
// <|python_tag|>). Text that is neither stays content; markup whose JSON does not parse stays
// content too (the client sees what the model wrote).
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace spore::serve {

struct ToolCall {
  std::string name;
  std::string arguments;  // JSON text, as OpenAI sends it
};

struct ParsedAnswer {
  std::string content;  // the answer without the tool-call markup (trimmed when calls were found)
  std::vector<ToolCall> calls;
};

ParsedAnswer parse_tool_calls(const std::string& text);

// OpenAI's [{"id", "type": "function", "function": {"name", "arguments"}}]; ids are
// "call_<prefix>_<i>". With `index`, each entry carries "index" (the streamed delta form).
nlohmann::json tool_calls_json(const std::vector<ToolCall>& calls, const std::string& id_prefix, bool index = false);

}  // namespace spore::serve
