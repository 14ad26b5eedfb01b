// OpenAI request bodies -> CompletionRequest (see request.h). Ranges follow OpenAI's API
// reference: temperature [0, 2], top_p (0, 1], penalties [-2, 2], top_logprobs [0, 20], at most
// 4 stop strings, n = 1 (this server produces one choice).
#include "serve/request.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace spore::serve {

namespace {

using nlohmann::json;

const char* type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_float: return "a float";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    default: return "an unknown type";
  }
}

ApiError wrong_type(const std::string& field, const std::string& want, const json& got) {
  return bad_field(field, "expected " + want + ", got " + type_name(got), "invalid_type");
}

// A number field in [lo, hi]; null and absent leave `out` alone.
bool number_in(const json& body, const char* field, double lo, double hi, double& out, bool lo_open = false) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return false;
  if (!it->is_number()) throw wrong_type(field, "a number", *it);
  const double v = it->get<double>();
  if (!std::isfinite(v) || v > hi || v < lo || (lo_open && v == lo)) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%g is out of range; use a value in %c%g, %g]", v, lo_open ? '(' : '[', lo, hi);
    throw bad_field(field, buf);
  }
  out = v;
  return true;
}

// nlohmann parses every non-negative integer as unsigned, so an unsigned value is checked against
// both ends too (0 used to slip past a lower bound of 1: max_tokens 0 reached the engine).
bool integer_in(const json& body, const char* field, int64_t lo, int64_t hi, int64_t& out) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return false;
  if (!it->is_number_integer()) throw wrong_type(field, "an integer", *it);
  const bool in_range = it->is_number_unsigned()
                            ? it->get<uint64_t>() <= (uint64_t)hi && (lo <= 0 || it->get<uint64_t>() >= (uint64_t)lo)
                            : it->get<int64_t>() >= lo && it->get<int64_t>() <= hi;
  if (!in_range)
    throw bad_field(field, it->dump() + " is out of range; use an integer in [" + std::to_string(lo) + ", " +
                               std::to_string(hi) + "]");
  out = it->get<int64_t>();
  return true;
}

bool boolean(const json& body, const char* field, bool& out) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return false;
  if (!it->is_boolean()) throw wrong_type(field, "a boolean", *it);
  out = it->get<bool>();
  return true;
}

// Message content as text: a string, null, or a list of {"type": "text", "text": ...} parts.
json content_text(const json& content, const std::string& field) {
  if (content.is_string() || content.is_null()) return content;
  if (!content.is_array()) throw wrong_type(field, "a string or a list of text parts", content);
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const json& part = content[i];
    const std::string pf = field + "[" + std::to_string(i) + "]";
    if (!part.is_object()) throw wrong_type(pf, "an object", part);
    auto type = part.find("type");
    if (type == part.end() || !type->is_string()) throw bad_field(pf + ".type", "missing; use \"text\"", "missing_field");
    if (*type != "text")
      throw bad_field(pf + ".type", "'" + type->get<std::string>() + "' parts are not supported by this text model; send text parts",
                      "unsupported_content");
    auto t = part.find("text");
    if (t == part.end() || !t->is_string()) throw bad_field(pf + ".text", "expected a string", "invalid_type");
    text += t->get<std::string>();
  }
  return text;
}

json parse_messages(const json& body, const RequestLimits& limits) {
  auto it = body.find("messages");
  if (it == body.end()) throw bad_field("messages", "missing; send a list of {\"role\", \"content\"} objects", "missing_field");
  if (!it->is_array()) throw wrong_type("messages", "a list of message objects", *it);
  if (it->empty()) throw bad_field("messages", "the list is empty; send at least one message", "empty_messages");
  if ((int64_t)it->size() > limits.max_messages)
    throw bad_field("messages", std::to_string(it->size()) + " messages is more than this server takes (" +
                                    std::to_string(limits.max_messages) + "); send fewer",
                    "too_many_messages");
  json out = json::array();
  for (size_t i = 0; i < it->size(); ++i) {
    const json& m = (*it)[i];
    const std::string f = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) throw wrong_type(f, "an object", m);
    auto role = m.find("role");
    if (role == m.end() || !role->is_string()) throw bad_field(f + ".role", "missing or not a string", "missing_field");
    const std::string r = role->get<std::string>();
    if (r != "system" && r != "user" && r != "assistant" && r != "tool" && r != "developer")
      throw bad_field(f + ".role", "'" + r + "' is not a role; use system, developer, user, assistant or tool");
    json msg = {{"role", r == "developer" ? "system" : r}};
    auto content = m.find("content");
    if (content == m.end()) {
      if (r != "assistant") throw bad_field(f + ".content", "missing", "missing_field");
      msg["content"] = nullptr;
    } else {
      msg["content"] = content_text(*content, f + ".content");
      if (msg["content"].is_null() && r != "assistant") throw bad_field(f + ".content", "null is only allowed for assistant messages");
    }
    for (const char* key : {"name", "tool_call_id"})
      if (auto k = m.find(key); k != m.end() && !k->is_null()) {
        if (!k->is_string()) throw wrong_type(f + "." + key, "a string", *k);
        msg[key] = *k;
      }
    if (auto tc = m.find("tool_calls"); tc != m.end() && !tc->is_null()) {
      if (!tc->is_array()) throw wrong_type(f + ".tool_calls", "a list", *tc);
      for (size_t k = 0; k < tc->size(); ++k)
        if (!(*tc)[k].is_object()) throw wrong_type(f + ".tool_calls[" + std::to_string(k) + "]", "an object", (*tc)[k]);
      msg["tool_calls"] = *tc;
    }
    out.push_back(std::move(msg));
  }
  return out;
}

// OpenAI's tools: a list (at most kMaxTools, OpenAI's own limit) of {"type": "function",
// "function": {"name": ..., ...}}. The chat template reads them as they are.
json parse_tools(const json& body) {
  auto t = body.find("tools");
  if (t == body.end() || t->is_null()) return nullptr;
  if (!t->is_array()) throw wrong_type("tools", "a list of tool objects", *t);
  if (t->size() > (size_t)kMaxTools)
    throw bad_field("tools", std::to_string(t->size()) + " tools is more than a request may offer (" +
                                 std::to_string(kMaxTools) + ", as OpenAI's API); send fewer",
                    "too_many_tools");
  for (size_t i = 0; i < t->size(); ++i) {
    const json& tool = (*t)[i];
    const std::string f = "tools[" + std::to_string(i) + "]";
    if (!tool.is_object()) throw wrong_type(f, "an object", tool);
    auto type = tool.find("type");
    if (type == tool.end() || *type != "function") throw bad_field(f + ".type", "use \"function\"");
    auto fn = tool.find("function");
    if (fn == tool.end() || !fn->is_object()) throw bad_field(f + ".function", "missing or not an object", "missing_field");
    auto name = fn->find("name");
    if (name == fn->end() || !name->is_string() || name->get<std::string>().empty())
      throw bad_field(f + ".function.name", "missing or not a non-empty string", "missing_field");
  }
  return *t;
}

}  // namespace

CompletionRequest parse_completion_request(std::string_view body_text, bool chat, const RequestLimits& limits) {
  const json body = parse_json_object(body_text, limits.max_body_bytes);
  CompletionRequest r;
  r.chat = chat;
  if (auto m = body.find("model"); m != body.end() && !m->is_null()) {
    if (!m->is_string()) throw wrong_type("model", "a string", *m);
    r.model = m->get<std::string>();
    if (!limits.model_id.empty() && !r.model.empty() && r.model != limits.model_id)
      throw ApiError(400, "The model '" + r.model + "' is not served here; GET /v1/models lists '" + limits.model_id + "'",
                     "invalid_request_error", "model", "model_not_found");
  }
  if (chat) {
    r.messages = parse_messages(body, limits);
    r.tools = parse_tools(body);
    // tool_choice: "auto" (the default with tools) and "none" (the model is not shown the tools,
    // as vLLM's --exclude-tools-when-tool-choice-none); forcing a call ("required", a named
    // function) needs constrained decoding, which this server does not have.
    if (auto tc = body.find("tool_choice"); tc != body.end() && !tc->is_null()) {
      if (!tc->is_string() && !tc->is_object()) throw wrong_type("tool_choice", "\"auto\", \"none\" or an object", *tc);
      if (*tc == "none") {
        r.tools = nullptr;
      } else if (*tc != "auto") {
        throw bad_field("tool_choice", "forcing a tool call (\"required\" or a named function) is not supported by this "
                                       "server; use \"auto\" or \"none\"",
                        "unsupported_value");
      }
    }
  } else {
    auto p = body.find("prompt");
    if (p == body.end()) throw bad_field("prompt", "missing; send the prompt text", "missing_field");
    if (p->is_string()) {
      r.prompt = p->get<std::string>();
    } else if (p->is_array() && p->size() == 1 && (*p)[0].is_string()) {
      r.prompt = (*p)[0].get<std::string>();
    } else if (p->is_array()) {
      throw bad_field("prompt", "this server takes one prompt per request (a string or a list of one string)", "unsupported_value");
    } else {
      throw wrong_type("prompt", "a string", *p);
    }
    if (r.prompt.empty()) throw bad_field("prompt", "empty; send some text", "empty_prompt");
    boolean(body, "echo", r.echo);
  }

  nlp::SamplingOptions& s = r.generate.sampling;
  number_in(body, "temperature", 0, 2, s.temperature);
  number_in(body, "top_p", 0, 1, s.top_p, /*lo_open=*/true);
  number_in(body, "min_p", 0, 1, s.min_p);
  int64_t top_k = 0;
  if (integer_in(body, "top_k", -1, 1 << 20, top_k)) s.top_k = std::max<int64_t>(top_k, 0);  // -1: off, as vLLM
  number_in(body, "presence_penalty", -2, 2, s.presence_penalty);
  number_in(body, "frequency_penalty", -2, 2, s.frequency_penalty);
  number_in(body, "repeat_penalty", 0, 10, s.repetition_penalty, true);      // llama.cpp's name
  number_in(body, "repetition_penalty", 0, 10, s.repetition_penalty, true);  // vLLM's
  int64_t n = 1;
  if (integer_in(body, "n", 1, 128, n) && n != 1)
    throw bad_field("n", "this server returns one choice per request; send n = 1 (or several requests)", "unsupported_value");
  int64_t max_tokens = 0;
  if (integer_in(body, "max_completion_tokens", 1, limits.context, max_tokens)) r.max_tokens = max_tokens;
  if (integer_in(body, "max_tokens", 1, limits.context, max_tokens)) r.max_tokens = max_tokens;
  if (auto seed = body.find("seed"); seed != body.end() && !seed->is_null()) {
    if (!seed->is_number_integer()) throw wrong_type("seed", "an integer", *seed);
    s.seed = seed->is_number_unsigned() ? seed->get<uint64_t>() : (uint64_t)seed->get<int64_t>();
  }
  if (auto stop = body.find("stop"); stop != body.end() && !stop->is_null()) {
    if (stop->is_string()) {
      r.generate.stop.push_back(stop->get<std::string>());
    } else if (stop->is_array()) {
      if (stop->size() > 4) throw bad_field("stop", "at most 4 stop strings, got " + std::to_string(stop->size()));
      for (const json& x : *stop) {
        if (!x.is_string()) throw wrong_type("stop", "a string or a list of strings", x);
        r.generate.stop.push_back(x.get<std::string>());
      }
    } else {
      throw wrong_type("stop", "a string or a list of strings", *stop);
    }
    for (const std::string& x : r.generate.stop)
      if (x.empty()) throw bad_field("stop", "an empty stop string would stop at once; drop it");
  }
  if (chat) {
    boolean(body, "logprobs", r.logprobs);
    if (integer_in(body, "top_logprobs", 0, 20, r.top_logprobs) && r.top_logprobs > 0 && !r.logprobs)
      throw bad_field("top_logprobs", "needs \"logprobs\": true");
  } else if (auto lp = body.find("logprobs"); lp != body.end() && !lp->is_null()) {
    // The legacy completions API: logprobs is the number of alternatives (0..5).
    int64_t k = 0;
    integer_in(body, "logprobs", 0, 5, k);
    r.logprobs = true;
    r.top_logprobs = k;
  }
  s.logprobs = r.logprobs;
  s.top_logprobs = r.top_logprobs;
  boolean(body, "ignore_eos", r.generate.ignore_eos);  // llama.cpp's extension (benchmarks, tests)
  boolean(body, "stream", r.stream);
  if (auto so = body.find("stream_options"); so != body.end() && !so->is_null()) {
    if (!so->is_object()) throw wrong_type("stream_options", "an object", *so);
    if (!r.stream) throw bad_field("stream_options", "only allowed with \"stream\": true");
    boolean(*so, "include_usage", r.include_usage);
  }
  return r;
}

}  // namespace spore::serve
