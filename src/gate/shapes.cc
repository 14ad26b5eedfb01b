#include "gate/shapes.h"

#include <set>

#include "io/json_depth.h"

namespace spore::gate {

namespace {

using nlohmann::json;

const std::set<std::string> kFinishReasons = {"stop", "length", "tool_calls", "content_filter", "function_call"};

std::string kind(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

// A member that must be present with one JSON type.
const json* need(Problems& p, const json& o, const std::string& at, const char* key, json::value_t t) {
  if (!o.is_object()) return nullptr;
  auto it = o.find(key);
  const std::string where = at.empty() ? key : at + "." + key;
  if (it == o.end()) {
    p.push_back(where + " is missing");
    return nullptr;
  }
  const bool ok = t == json::value_t::number_integer ? it->is_number_integer()
                  : t == json::value_t::number_float ? it->is_number()
                                                     : it->type() == t;
  if (!ok) {
    p.push_back(where + " is " + kind(*it) + ", expected " +
                (t == json::value_t::string         ? "a string"
                 : t == json::value_t::number_integer ? "an integer"
                 : t == json::value_t::number_float   ? "a number"
                 : t == json::value_t::array          ? "an array"
                 : t == json::value_t::object         ? "an object"
                                                      : "a boolean"));
    return nullptr;
  }
  return &*it;
}

void need_const(Problems& p, const json& o, const std::string& at, const char* key, const std::string& value) {
  if (const json* v = need(p, o, at, key, json::value_t::string); v && *v != value)
    p.push_back((at.empty() ? key : at + "." + key) + std::string(" is ") + v->dump() + ", expected \"" + value + "\"");
}

void need_root_object(Problems& p, const json& j) {
  if (!j.is_object()) p.push_back("the answer is " + kind(j) + ", not a JSON object");
}

void finish_reason(Problems& p, const json& c, const std::string& at, bool nullable) {
  auto it = c.find("finish_reason");
  if (it == c.end()) return p.push_back(at + ".finish_reason is missing");
  if (it->is_null() && nullable) return;
  if (!it->is_string() || !kFinishReasons.count(it->get<std::string>()))
    p.push_back(at + ".finish_reason is " + it->dump().substr(0, 60) + ", expected one of stop, length, tool_calls");
}

// id, object, created, model: the head every completion object carries.
void head(Problems& p, const json& j, const std::string& object) {
  need(p, j, "", "id", json::value_t::string);
  need_const(p, j, "", "object", object);
  need(p, j, "", "created", json::value_t::number_integer);
  need(p, j, "", "model", json::value_t::string);
}

// Each element of the array j[key] (required), as check(element, "key[i]", i) when it is an
// object and a problem when it is not; `empty` is the problem of an empty array (null: allowed).
template <typename F>
void each_object(Problems& p, const json& j, const char* key, const char* empty, F&& check) {
  const json* a = need(p, j, "", key, json::value_t::array);
  if (!a) return;
  if (empty && a->empty()) p.push_back(empty);
  for (size_t i = 0; i < a->size(); ++i) {
    const std::string at = std::string(key) + '[' + std::to_string(i) + ']';
    const json& c = (*a)[i];
    if (!c.is_object()) {
      p.push_back(at + " is " + kind(c) + ", expected an object");
      continue;
    }
    check(c, at, i);
  }
}

void add_usage(Problems& p, const json& u) {
  Problems up = check_usage(u, "usage");
  p.insert(p.end(), up.begin(), up.end());
}

// A whole (not streamed) completion object: its head, its choices (non-empty, each checked by
// check_choice as the choice's own fields, then its finish_reason) and its usage (required).
template <typename F>
Problems completion_object(const json& j, const std::string& object, F&& check_choice) {
  Problems p;
  need_root_object(p, j);
  if (!j.is_object()) return p;
  head(p, j, object);
  each_object(p, j, "choices", "choices is empty", [&](const json& c, const std::string& at, size_t i) {
    check_choice(p, c, at, i);
    finish_reason(p, c, at, false);
  });
  if (const json* u = need(p, j, "", "usage", json::value_t::object)) add_usage(p, *u);
  return p;
}

}  // namespace

bool parse_answer(const std::string& text, json& out, std::string& error) {
  try {
    out = io::parse_json_bounded<json>(text, kMaxDepth);
    return true;
  } catch (const io::JsonTooDeep&) {
    error = "the answer nests objects and arrays deeper than " + std::to_string(kMaxDepth) + " levels";
  } catch (const json::exception&) {
    error = "the answer is not JSON: " + text.substr(0, 80);
  }
  out = json();
  return false;
}

Problems check_usage(const json& u, const std::string& at) {
  Problems p;
  if (!u.is_object()) return {at + " is " + kind(u) + ", expected an object"};
  const json* pt = need(p, u, at, "prompt_tokens", json::value_t::number_integer);
  const json* ct = need(p, u, at, "completion_tokens", json::value_t::number_integer);
  const json* tt = need(p, u, at, "total_tokens", json::value_t::number_integer);
  if (pt && ct && tt) {
    const long long a = pt->get<long long>(), b = ct->get<long long>(), t = tt->get<long long>();
    if (a < 0 || b < 0) p.push_back(at + " has a negative token count");
    else if (a + b != t)
      p.push_back(at + ".total_tokens is " + std::to_string(t) + ", not prompt_tokens + completion_tokens = " +
                  std::to_string(a + b));
  }
  return p;
}

Problems check_models(const json& j) {
  Problems p;
  need_root_object(p, j);
  need_const(p, j, "", "object", "list");
  each_object(p, j, "data", "data is empty: the server lists no model", [&](const json& m, const std::string& at, size_t) {
    need(p, m, at, "id", json::value_t::string);
    need_const(p, m, at, "object", "model");
    need(p, m, at, "created", json::value_t::number_integer);
    need(p, m, at, "owned_by", json::value_t::string);
  });
  return p;
}

Problems check_chat_completion(const json& j) {
  return completion_object(j, "chat.completion", [](Problems& p, const json& c, const std::string& at, size_t i) {
    if (const json* ix = need(p, c, at, "index", json::value_t::number_integer); ix && *ix != (int)i)
      p.push_back(at + ".index is " + ix->dump() + ", expected " + std::to_string(i));
    if (const json* m = need(p, c, at, "message", json::value_t::object)) {
      need_const(p, *m, at + ".message", "role", "assistant");
      auto ct = m->find("content");
      const bool tools = m->contains("tool_calls") && (*m)["tool_calls"].is_array();
      if (ct == m->end()) p.push_back(at + ".message.content is missing");
      else if (!ct->is_string() && !(ct->is_null() && tools))
        p.push_back(at + ".message.content is " + kind(*ct) + ", expected a string (null only with tool_calls)");
    }
  });
}

Problems check_chat_chunk(const json& j) {
  Problems p;
  need_root_object(p, j);
  if (!j.is_object()) return p;
  head(p, j, "chat.completion.chunk");
  each_object(p, j, "choices", nullptr, [&](const json& c, const std::string& at, size_t) {
    need(p, c, at, "index", json::value_t::number_integer);
    if (const json* d = need(p, c, at, "delta", json::value_t::object)) {
      if (auto r = d->find("role"); r != d->end() && *r != "assistant")
        p.push_back(at + ".delta.role is " + r->dump().substr(0, 40) + ", expected \"assistant\"");
      if (auto ct = d->find("content"); ct != d->end() && !ct->is_string() && !ct->is_null())
        p.push_back(at + ".delta.content is " + kind(*ct) + ", expected a string");
    }
    finish_reason(p, c, at, true);
  });
  if (auto u = j.find("usage"); u != j.end() && !u->is_null()) add_usage(p, *u);
  return p;
}

Problems check_completion(const json& j) {
  return completion_object(j, "text_completion", [](Problems& p, const json& c, const std::string& at, size_t) {
    need(p, c, at, "index", json::value_t::number_integer);
    need(p, c, at, "text", json::value_t::string);
  });
}

Problems check_error_object(const json& j) {
  Problems p;
  need_root_object(p, j);
  if (const json* e = need(p, j, "", "error", json::value_t::object)) {
    if (const json* m = need(p, *e, "error", "message", json::value_t::string); m && m->get<std::string>().empty())
      p.push_back("error.message is empty");
    need(p, *e, "error", "type", json::value_t::string);
    // param and code are present, possibly null (OpenAI sends null when they do not apply).
    for (const char* k : {"param", "code"}) {
      auto it = e->find(k);
      if (it == e->end()) p.push_back(std::string("error.") + k + " is missing (null when it does not apply)");
      else if (!it->is_null() && !it->is_string() && !it->is_number_integer())
        p.push_back(std::string("error.") + k + " is " + kind(*it) + ", expected a string or null");
    }
  }
  return p;
}

void add_chat_event(StreamSummary& s, const std::string& data) {
  const size_t n = s.problems.size();
  auto note = [&](const std::string& what) {
    if (s.problems.size() < n + 8) s.problems.push_back(what);
  };
  if (s.done) return note("an event came after data: [DONE]");
  if (data == "[DONE]") {
    s.done = true;
    return;
  }
  json j;
  std::string error;
  if (!parse_answer(data, j, error)) return note("an event's data: " + error);
  for (const auto& q : check_chat_chunk(j)) note("chunk: " + q);
  if (!j.is_object()) return;
  if (auto id = j.find("id"); id != j.end() && id->is_string()) {
    if (s.id.empty()) s.id = *id;
    else if (*id != s.id) note("chunk id changed from \"" + s.id + "\" to " + id->dump().substr(0, 60));
  }
  if (s.usage_seen) note("a chunk came after the usage chunk (usage must be the last chunk)");
  const auto cs = j.find("choices");
  if (cs == j.end() || !cs->is_array()) return;
  if (auto u = j.find("usage"); u != j.end() && !u->is_null()) {
    if (!cs->empty()) note("a chunk carries usage but also choices (the usage chunk has choices: [])");
    s.usage_seen = true;
    if (u->is_object()) {
      if (auto c = u->find("completion_tokens"); c != u->end() && c->is_number_integer()) s.completion_tokens = *c;
      if (auto c = u->find("prompt_tokens"); c != u->end() && c->is_number_integer()) s.prompt_tokens = *c;
    }
  } else if (cs->empty()) {
    note("a chunk has empty choices and no usage");
  }
  for (const json& c : *cs) {
    if (!c.is_object()) continue;
    if (auto d = c.find("delta"); d != c.end() && d->is_object())
      if (auto ct = d->find("content"); ct != d->end() && ct->is_string() && !ct->get_ref<const std::string&>().empty()) {
        if (!s.finish_reason.empty()) note("content came after finish_reason");
        s.content += ct->get<std::string>();
        ++s.content_chunks;
      }
    if (auto f = c.find("finish_reason"); f != c.end() && f->is_string()) {
      if (!s.finish_reason.empty()) note("finish_reason came twice");
      s.finish_reason = *f;
    }
  }
}

void finish_chat_stream(StreamSummary& s, bool usage_requested) {
  if (!s.done) s.problems.push_back("the stream ended without data: [DONE]");
  if (s.finish_reason.empty()) s.problems.push_back("no chunk carried a finish_reason");
  if (usage_requested && !s.usage_seen)
    s.problems.push_back("stream_options.include_usage was set but no usage chunk came before [DONE]");
  if (!usage_requested && s.usage_seen) s.problems.push_back("a usage chunk came though include_usage was not set");
}

}  // namespace spore::gate
