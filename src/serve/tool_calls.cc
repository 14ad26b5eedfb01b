#include "serve/tool_calls.h"

namespace spore::serve {

using nlohmann::json;

namespace {

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// {"name": string, "arguments"|"parameters": object or string} -> a call.
bool as_call(const std::string& text, ToolCall& out) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return false;
  auto name = j.find("name");
  if (name == j.end() || !name->is_string() || name->get<std::string>().empty()) return false;
  auto args = j.find("arguments");
  if (args == j.end()) args = j.find("parameters");
  out.name = *name;
  if (args == j.end() || args->is_null()) out.arguments = "{}";
  else if (args->is_string()) out.arguments = *args;
  else out.arguments = args->dump(-1, ' ', false, json::error_handler_t::replace);
  return true;
}

}  // namespace

ParsedAnswer parse_tool_calls(const std::string& text) {
  ParsedAnswer p;
  static const std::string open = "<tool_call>", close = "</tool_call>";
  std::string rest;
  size_t pos = 0;
  while (true) {
    const size_t a = text.find(open, pos);
    if (a == std::string::npos) break;
    const size_t b = text.find(close, a + open.size());
    ToolCall call;
    // An unclosed tag at the end (the answer ran out of tokens) is tried as a call too.
    const size_t body_end = b == std::string::npos ? text.size() : b;
    if (!as_call(trim(text.substr(a + open.size(), body_end - a - open.size())), call)) break;
    rest += text.substr(pos, a - pos);
    p.calls.push_back(std::move(call));
    pos = b == std::string::npos ? text.size() : b + close.size();
  }
  if (!p.calls.empty()) {
    rest += text.substr(pos);
    p.content = trim(rest);
    return p;
  }
  // Llama 3: the whole answer is the call.
  std::string t = trim(text);
  static const std::string python_tag = "<|python_tag|>";
  if (t.compare(0, python_tag.size(), python_tag) == 0) t = trim(t.substr(python_tag.size()));
  ToolCall call;
  if (!t.empty() && t.front() == '{' && as_call(t, call)) {
    p.calls.push_back(std::move(call));
    return p;
  }
  p.content = text;
  return p;
}

json tool_calls_json(const std::vector<ToolCall>& calls, const std::string& id_prefix, bool index) {
  json out = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    json c = {{"id", "call_" + id_prefix + "_" + std::to_string(i)},
              {"type", "function"},
              {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
    if (index) c["index"] = i;
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace spore::serve
