// The gate's checks, one function each (NOTE [Machine gate]). A check passes only on what it
// observed: the status, the content type and the body's shape; every problem found is kept in
// the evidence, the first few in the reason.
#include "gate/checks.h"
#include "gate/sse.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace spore::gate {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

CheckResult start(const char* name, const char* description) {
  CheckResult c;
  c.name = name;
  c.description = description;
  c.evidence = json::object();
  return c;
}

// The verdict from the problems found: pass when there are none.
CheckResult& decide(CheckResult& c, const Problems& p, const std::string& pass_reason) {
  c.evidence["problems"] = p;
  if (p.empty()) {
    c.verdict = "observed-pass";
    c.reason = pass_reason;
  } else {
    c.verdict = "observed-fail";
    c.reason = p[0];
    for (size_t i = 1; i < p.size() && i < 3; ++i) c.reason += "; " + p[i];
    if (p.size() > 3) c.reason += "; and " + std::to_string(p.size() - 3) + " more";
  }
  return c;
}

// Status, content type and (parsed) body into the evidence; problems for what is off.
void record(CheckResult& c, const HttpResponse& r, Problems& p) {
  c.evidence["status"] = r.status;
  c.evidence["content_type"] = r.content_type;
  c.evidence["body_head"] = r.body.substr(0, 400);
  if (!r.error.empty()) {
    c.evidence["transport_error"] = r.error;
    p.push_back("no answer: " + r.error);
  }
}

bool is_json_type(const std::string& ct) { return ct.rfind("application/json", 0) == 0; }

// A JSON answer with the expected status: the parsed body, or null with problems noted.
json expect_json(const HttpResponse& r, long status, Problems& p) {
  if (!r.error.empty()) return nullptr;
  if (r.status != status) p.push_back("status " + std::to_string(r.status) + ", expected " + std::to_string(status));
  if (!is_json_type(r.content_type)) p.push_back("Content-Type is '" + r.content_type + "', expected application/json");
  json j;
  std::string error;
  if (!parse_answer(r.body, j, error)) {
    p.push_back(error);
    return nullptr;
  }
  return j;
}

void append(Problems& p, const Problems& q, const std::string& prefix = "") {
  for (const auto& x : q) p.push_back(prefix + x);
}

json chat_body(const Target& t, const std::string& prompt, bool stream) {
  json b = {{"model", t.model},
            {"messages", json::array({{{"role", "user"}, {"content", prompt}}})},
            {"max_tokens", t.max_tokens},
            {"temperature", 0},
            {"seed", 42}};
  if (stream) {
    b["stream"] = true;
    b["stream_options"] = {{"include_usage", true}};
  }
  return b;
}

// An error answer: a 4xx among `statuses` with OpenAI's error object.
CheckResult error_check(CheckResult c, const HttpResponse& r, std::initializer_list<long> statuses, const double t0_ms) {
  Problems p;
  record(c, r, p);
  if (r.error.empty()) {
    bool ok = false;
    std::string want;
    for (long s : statuses) {
      ok = ok || r.status == s;
      want += (want.empty() ? "" : " or ") + std::to_string(s);
    }
    if (!ok) p.push_back("status " + std::to_string(r.status) + ", expected " + want);
    if (!is_json_type(r.content_type)) p.push_back("Content-Type is '" + r.content_type + "', expected application/json");
    json j;
    std::string error;
    if (!parse_answer(r.body, j, error)) p.push_back(error);
    else append(p, check_error_object(j));
    if (j.is_object() && j.contains("error") && j["error"].is_object()) c.evidence["error"] = j["error"];
  }
  c.duration_ms = t0_ms;
  return decide(c, p, "status " + std::to_string(r.status) + " with an OpenAI error object");
}

}  // namespace

HttpResponse Target::get(const std::string& path) const {
  HttpRequest q;
  q.url = join_url(url, path);
  q.api_key = api_key;
  q.timeout_s = timeout_s;
  return http_send(q);
}

HttpResponse Target::post(const std::string& path, const std::string& body) const {
  HttpRequest q;
  q.method = "POST";
  q.url = join_url(url, path);
  q.body = body;
  q.api_key = api_key;
  q.timeout_s = timeout_s;
  return http_send(q);
}

std::string stream_body(const Target& t, const std::string& prompt) { return chat_body(t, prompt, true).dump(); }

CheckResult check_health(const Target& t, double wait_s) {
  CheckResult c = start("health", "GET /health answers 200 {\"status\": \"ok\"} (503 while loading is waited out)");
  const auto t0 = Clock::now();
  HttpResponse r = t.get("/health");
  int waits = 0;
  // A server still loading its model answers 503; wait for it as a client would.
  while (r.error.empty() && r.status == 503 && ms_since(t0) < wait_s * 1000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    r = t.get("/health");
    ++waits;
  }
  Problems p;
  record(c, r, p);
  c.evidence["waited_503"] = waits;
  json j = expect_json(r, 200, p);
  if (j.is_object()) {
    if (!j.contains("status") || j["status"] != "ok") p.push_back("body has no \"status\": \"ok\"");
  } else if (!j.is_null()) {
    p.push_back("the body is not a JSON object");
  }
  c.duration_ms = ms_since(t0);
  return decide(c, p, "200 {\"status\": \"ok\"}");
}

CheckResult check_models_route(Target& t) {
  CheckResult c = start("models", "GET /v1/models lists the model in OpenAI's list shape");
  const auto t0 = Clock::now();
  const HttpResponse r = t.get("/v1/models");
  Problems p;
  record(c, r, p);
  json j = expect_json(r, 200, p);
  if (!j.is_null()) append(p, check_models(j));
  std::vector<std::string> ids;
  if (j.is_object() && j.contains("data") && j["data"].is_array())
    for (const auto& m : j["data"])
      if (m.is_object() && m.contains("id") && m["id"].is_string()) ids.push_back(m["id"]);
  c.evidence["ids"] = ids;
  if (t.model.empty() && !ids.empty()) t.model = ids[0];
  else if (!t.model.empty() && std::find(ids.begin(), ids.end(), t.model) == ids.end())
    p.push_back("the model '" + t.model + "' (--model) is not listed");
  c.duration_ms = ms_since(t0);
  return decide(c, p, std::to_string(ids.size()) + " model(s); using '" + t.model + "'");
}

CheckResult check_chat_json(const Target& t) {
  CheckResult c = start("chat_json", "POST /v1/chat/completions (JSON): chat.completion shape, usage, content");
  const auto t0 = Clock::now();
  const HttpResponse r = t.post("/v1/chat/completions", chat_body(t, "Say hello in five words.", false).dump());
  Problems p;
  record(c, r, p);
  json j = expect_json(r, 200, p);
  std::string content;
  if (!j.is_null()) {
    append(p, check_chat_completion(j));
    if (p.empty()) {
      content = j["choices"][0]["message"]["content"].is_string() ? j["choices"][0]["message"]["content"].get<std::string>() : "";
      const long long ct = j["usage"]["completion_tokens"];
      c.evidence["completion_tokens"] = ct;
      if (ct < 1) p.push_back("usage.completion_tokens is 0: nothing was generated");
      if (ct > t.max_tokens) p.push_back("usage.completion_tokens " + std::to_string(ct) + " exceeds max_tokens " + std::to_string(t.max_tokens));
      if (j["model"] != t.model) p.push_back("model is " + j["model"].dump() + ", asked for \"" + t.model + "\"");
    }
  }
  c.evidence["content"] = content;
  c.duration_ms = ms_since(t0);
  return decide(c, p, "chat.completion with usage; content: " + json(content.substr(0, 60)).dump());
}

CheckResult check_chat_sse(const Target& t) {
  CheckResult c = start("chat_sse",
                        "POST /v1/chat/completions (stream, include_usage): SSE framing, chunk shapes, usage chunk, [DONE]");
  const auto t0 = Clock::now();
  HttpRequest q;
  q.method = "POST";
  q.url = join_url(t.url, "/v1/chat/completions");
  q.body = stream_body(t, "Name three colours.");
  q.api_key = t.api_key;
  q.timeout_s = t.timeout_s;
  SseParser sse;
  StreamSummary s;
  q.on_data = [&](const char* d, size_t n) {
    sse.feed(d, n);
    for (const auto& e : sse.take()) add_chat_event(s, e.data);
  };
  const HttpResponse r = http_send(q);
  sse.finish();
  Problems p;
  record(c, r, p);
  if (r.error.empty()) {
    if (r.status != 200) p.push_back("status " + std::to_string(r.status) + ", expected 200");
    if (r.content_type.rfind("text/event-stream", 0) != 0)
      p.push_back("Content-Type is '" + r.content_type + "', expected text/event-stream");
    append(p, sse.problems(), "framing: ");
    finish_chat_stream(s, true);
    append(p, s.problems);
    if (s.usage_seen && s.completion_tokens < 1) p.push_back("the usage chunk counts no completion token");
  }
  c.evidence["events"] = sse.events_seen();
  c.evidence["content_chunks"] = s.content_chunks;
  c.evidence["content"] = s.content;
  c.evidence["completion_tokens"] = s.completion_tokens;
  c.evidence["finish_reason"] = s.finish_reason;
  c.duration_ms = ms_since(t0);
  return decide(c, p, std::to_string(sse.events_seen()) + " events, usage chunk, [DONE]; content: " +
                          json(s.content.substr(0, 60)).dump());
}

CheckResult check_completion_json(const Target& t) {
  CheckResult c = start("completion_json", "POST /v1/completions (JSON): text_completion shape and usage");
  const auto t0 = Clock::now();
  const json body = {{"model", t.model}, {"prompt", "The capital of France is"}, {"max_tokens", t.max_tokens},
                     {"temperature", 0}, {"seed", 42}};
  const HttpResponse r = t.post("/v1/completions", body.dump());
  Problems p;
  record(c, r, p);
  json j = expect_json(r, 200, p);
  std::string text;
  if (!j.is_null()) {
    append(p, check_completion(j));
    if (p.empty()) {
      text = j["choices"][0]["text"];
      if (j["usage"]["completion_tokens"].get<long long>() < 1) p.push_back("usage.completion_tokens is 0");
    }
  }
  c.evidence["text"] = text;
  c.duration_ms = ms_since(t0);
  return decide(c, p, "text_completion with usage; text: " + json(text.substr(0, 60)).dump());
}

CheckResult check_malformed_json(const Target& t) {
  const auto t0 = Clock::now();
  const HttpResponse r = t.post("/v1/chat/completions", "{\"model\": \"x\", \"messages\": [");
  return error_check(start("protocol_malformed_json", "a body that is not JSON gets 400 and an OpenAI error object"), r,
                     {400}, ms_since(t0));
}

CheckResult check_unknown_model(const Target& t) {
  const auto t0 = Clock::now();
  json b = chat_body(t, "hi", false);
  b["model"] = "spore-gate-no-such-model";
  const HttpResponse r = t.post("/v1/chat/completions", b.dump());
  return error_check(start("protocol_unknown_model", "an unknown model gets 404 (or 400) and an OpenAI error object"), r,
                     {404, 400}, ms_since(t0));
}

CheckResult check_unknown_route(const Target& t) {
  const auto t0 = Clock::now();
  const HttpResponse r = t.get("/v1/spore-gate-no-such-route");
  return error_check(start("protocol_unknown_route", "an unknown route gets 404 and an OpenAI error object"), r, {404},
                     ms_since(t0));
}

}  // namespace spore::gate
