// OpenAI request bodies -> CompletionRequest (see request.h). Ranges follow OpenAI's API
// reference: temperature [0, 2], top_p (0, 1], penalties [-2, 2], top_logprobs [0, 20], at most
// 4 stop strings, n = 1 (this server produces one choice).
#include "serve/request.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>

#include "spore/error.h"
#include "spore/nlp/grammar.h"

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

// A grammar's text compiled, or a 400 naming the field (the grammar engine's message says what
// and where: line, rule, keyword).
std::shared_ptr<const nlp::Grammar> compile(const std::string& field, const std::string& code,
                                            const std::function<std::string()>& gbnf) {
  try {
    return nlp::Grammar::from_gbnf(gbnf());
  } catch (const Error& e) {
    throw bad_field(field, e.what(), code);
  }
}

// The tool-call markup parse_tool_calls reads (Qwen/Hermes), one call or several, each naming one
// of `tools` with arguments that follow its parameters' schema.
std::string tool_call_gbnf(const json& tools, bool parallel) {
  std::string calls, rules;
  for (size_t i = 0; i < tools.size(); ++i) {
    const json& fn = tools[i]["function"];
    // append, not "x" + a temporary: GCC 12 warns falsely there (-Wrestrict, GCC bug 105329).
    const std::string args = std::string(1, 'a').append(std::to_string(i));
    json params = fn.contains("parameters") && !fn["parameters"].is_null() ? fn["parameters"] : json{{"type", "object"}};
    std::string schema;
    try {
      schema = nlp::json_schema_to_gbnf(params.dump(), {}, args);
    } catch (const Error& e) {
      throw bad_field("tools[" + std::to_string(i) + "].function.parameters", e.what(), "invalid_json_schema");
    }
    std::string name_lit = "\"";
    for (unsigned char c : json(fn["name"].get<std::string>()).dump()) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      name_lit += c < 0x80 ? std::string(buf) : std::string(1, (char)c);
    }
    name_lit += "\"";
    rules += schema;
    rules.append(1, 't');
    rules += std::to_string(i) + " ::= \"<tool_call>\\n{\\\"name\\\": \" " + name_lit +
             " \", \\\"arguments\\\": \" " + args + " \"}\\n</tool_call>\"\n";
    calls += (i ? " | t" : "t") + std::to_string(i);
  }
  return "root ::= call" + std::string(parallel ? " (\"\\n\" call)*" : "") + "\ncall ::= " + calls + "\n" + rules;
}

// The constrained-decoding fields: `grammar` (llama.cpp's server), `response_format` (OpenAI) and,
// for chat, a tool_choice that forces a call. At most one of them shapes a request.
void parse_constraints(const json& body, CompletionRequest& r, const json* forced_tools) {
  int given = 0;
  if (auto g = body.find("grammar"); g != body.end() && !g->is_null()) {
    if (!g->is_string()) throw wrong_type("grammar", "GBNF text (a string)", *g);
    ++given;
    r.generate.grammar = compile("grammar", "invalid_grammar", [&] { return g->get<std::string>(); });
  }
  if (auto rf = body.find("response_format"); rf != body.end() && !rf->is_null()) {
    if (!rf->is_object()) throw wrong_type("response_format", "an object", *rf);
    auto type = rf->find("type");
    if (type == rf->end() || !type->is_string())
      throw bad_field("response_format.type", "missing; use \"text\", \"json_object\" or \"json_schema\"", "missing_field");
    const std::string t = type->get<std::string>();
    if (t == "json_object") {
      ++given;
      r.generate.grammar = compile("response_format", "invalid_json_schema", [] { return nlp::json_object_gbnf(); });
    } else if (t == "json_schema") {
      auto js = rf->find("json_schema");
      if (js == rf->end() || !js->is_object())
        throw bad_field("response_format.json_schema", "missing; send {\"name\": ..., \"schema\": {...}, \"strict\": true}",
                        "missing_field");
      auto schema = js->find("schema");
      if (schema == js->end() || !(schema->is_object() || schema->is_boolean()))
        throw bad_field("response_format.json_schema.schema", "missing or not a JSON Schema object", "missing_field");
      if (auto strict = js->find("strict"); strict != js->end() && !strict->is_null() && !strict->is_boolean())
        throw wrong_type("response_format.json_schema.strict", "a boolean", *strict);
      ++given;
      r.generate.grammar = compile("response_format.json_schema.schema", "invalid_json_schema",
                                   [&] { return nlp::json_schema_to_gbnf(schema->dump()); });
    } else if (t != "text") {
      throw bad_field("response_format.type", "'" + t + "' is not a response format; use \"text\", \"json_object\" or \"json_schema\"");
    }
  }
  if (forced_tools) {
    ++given;
    bool parallel = true;
    boolean(body, "parallel_tool_calls", parallel);
    r.generate.grammar = compile("tool_choice", "invalid_json_schema", [&] { return tool_call_gbnf(*forced_tools, parallel); });
    r.forced_tools = true;
  }
  if (given > 1)
    throw bad_field(forced_tools ? "tool_choice" : "grammar",
                    "only one of \"grammar\", \"response_format\" (json_object or json_schema) and a forced tool_choice "
                    "may shape the output; send one",
                    "conflicting_fields");
}

// "speculative": "ngram" | "draft" | "none", or {"type": ..., "n_max": K} (NOTE [Speculative
// decoding]); absent or null: the server's default.
void parse_speculative(const json& body, const RequestLimits& limits, nlp::SpeculativeOptions& out) {
  out = limits.speculative;
  auto it = body.find("speculative");
  if (it == body.end() || it->is_null()) return;
  const json* type = nullptr;
  if (it->is_string()) {
    type = &*it;
  } else if (it->is_object()) {
    if (auto t = it->find("type"); t != it->end() && !t->is_null()) type = &*t;
    if (auto n = it->find("n_max"); n != it->end() && !n->is_null()) {
      if (!n->is_number_integer()) throw wrong_type("speculative.n_max", "an integer", *n);
      const bool in_range = n->is_number_unsigned() ? n->get<uint64_t>() >= 1 && n->get<uint64_t>() <= 64
                                                    : n->get<int64_t>() >= 1 && n->get<int64_t>() <= 64;
      if (!in_range)
        throw bad_field("speculative.n_max", n->dump() + " is out of range; draft 1 to 64 tokens per step");
      out.draft_max = n->get<int64_t>();
    }
  } else {
    throw wrong_type("speculative", "a string (\"ngram\", \"draft\" or \"none\") or an object {\"type\", \"n_max\"}", *it);
  }
  if (type) {
    if (!type->is_string()) throw wrong_type("speculative.type", "a string", *type);
    const std::string name = type->get<std::string>();
    try {
      out.type = nlp::parse_speculative_type(name);
    } catch (const Error&) {
      throw bad_field("speculative", "'" + name + "' is not a speculative decoding type; use \"ngram\" (prompt lookup), "
                      "\"draft\" (the server's draft model) or \"none\"", "unsupported_value");
    }
  }
  if (out.type == nlp::SpeculativeOptions::Type::kDraft && !limits.draft_model)
    throw bad_field("speculative", "\"draft\" needs a draft model, and this server was started without one "
                    "(spore serve --spec-draft-model PATH); use \"ngram\"", "unsupported_value");
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
      throw ApiError(404, "The model '" + r.model + "' is not served here; GET /v1/models lists '" + limits.model_id + "'",
                     "invalid_request_error", "model", "model_not_found");
  }
  if (chat) {
    r.messages = parse_messages(body, limits);
    r.tools = parse_tools(body);
    // tool_choice: "auto" (the default with tools), "none" (the model is not shown the tools, as
    // vLLM's --exclude-tools-when-tool-choice-none), "required" (at least one call to any of
    // them) or {"type": "function", "function": {"name": ...}} (calls to that one): the forced
    // forms constrain the answer to the call markup with each tool's parameter schema.
    json forced = nullptr;
    if (auto tc = body.find("tool_choice"); tc != body.end() && !tc->is_null()) {
      if (!tc->is_string() && !tc->is_object()) throw wrong_type("tool_choice", "\"auto\", \"none\", \"required\" or an object", *tc);
      if (*tc == "none") {
        r.tools = nullptr;
      } else if (*tc == "required") {
        if (!r.tools.is_array() || r.tools.empty()) throw bad_field("tool_choice", "\"required\" needs \"tools\"; send the tools to call", "missing_field");
        forced = r.tools;
      } else if (tc->is_object()) {
        auto fn = tc->find("function");
        auto name = fn != tc->end() && fn->is_object() ? fn->find("name") : tc->end();
        if (tc->value("type", json()) != "function" || fn == tc->end() || !fn->is_object() || name == fn->end() || !name->is_string())
          throw bad_field("tool_choice", "expected {\"type\": \"function\", \"function\": {\"name\": ...}}");
        if (r.tools.is_array())
          for (const json& t : r.tools)
            if (t["function"]["name"] == *name) forced = json::array({t});
        if (forced.is_null())
          throw bad_field("tool_choice", "names the function '" + name->get<std::string>() + "', which is not in \"tools\"",
                          "unknown_tool");
      } else if (*tc != "auto") {
        throw bad_field("tool_choice", "'" + tc->get<std::string>() + "' is not a choice; use \"auto\", \"none\", \"required\" or {\"type\": \"function\", ...}");
      }
    }
    parse_constraints(body, r, forced.is_null() ? nullptr : &forced);
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
    parse_constraints(body, r, nullptr);
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
  parse_speculative(body, limits, r.generate.speculative);
  r.lora = parse_lora_field(body, limits.lora_adapters);
  boolean(body, "stream", r.stream);
  if (auto so = body.find("stream_options"); so != body.end() && !so->is_null()) {
    if (!so->is_object()) throw wrong_type("stream_options", "an object", *so);
    if (!r.stream) throw bad_field("stream_options", "only allowed with \"stream\": true");
    boolean(*so, "include_usage", r.include_usage);
  }
  return r;
}

}  // namespace spore::serve
