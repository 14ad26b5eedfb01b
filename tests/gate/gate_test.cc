// spore gate (src/gate/, NOTE [Machine gate]): its parts (the SSE parser, the response shapes,
// the percentiles), then the whole gate against a fake OpenAI server that gets one thing wrong
// at a time (each check must be able to fail, and a correct fake must pass), and against a real
// `spore serve` with SmolLM2-135M (skipped with the reason when the model file is absent).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

#include "gate/shapes.h"
#include "gate/sse.h"
#include "gate/stats.h"
#include "serve/serve_test_util.h"
#include "spore/gate.h"
#include "spore/probe/report.h"

namespace {

using nlohmann::json;
using namespace spore::gate;
using namespace spore::test;

// ---- the parts ----

std::vector<SseEvent> parse_all(const std::string& text, size_t piece, SseParser& p) {
  std::vector<SseEvent> out;
  for (size_t i = 0; i < text.size(); i += piece) {
    p.feed(text.data() + i, std::min(piece, text.size() - i));
    for (auto& e : p.take()) out.push_back(e);
  }
  p.finish();
  return out;
}

TEST(GateSse, LineEndingsCommentsAndMultiLineData) {
  const std::string text = ": keep-alive\r\ndata: {\"a\":1}\r\n\r\ndata:x\rdata: y\r\revent: e\ndata: z\n\n";
  for (size_t piece : {1, 2, 3, 7, 1000}) {
    SseParser p;
    const auto ev = parse_all(text, piece, p);
    ASSERT_EQ(ev.size(), 3u) << "piece " << piece;
    EXPECT_EQ(ev[0].data, "{\"a\":1}");
    EXPECT_EQ(ev[1].data, "x\ny");  // no space after the colon is legal; data lines join with \n
    EXPECT_EQ(ev[2].event, "e");
    EXPECT_EQ(ev[2].data, "z");
    EXPECT_TRUE(p.problems().empty()) << p.problems()[0];
  }
}

TEST(GateSse, FramingProblemsAreNamed) {
  SseParser a;
  parse_all("data: 1\n\ndata: 2\n", 5, a);  // no blank line after the last event
  ASSERT_EQ(a.problems().size(), 1u);
  EXPECT_NE(a.problems()[0].find("ended inside an event"), std::string::npos);
  SseParser b;
  parse_all("dat: 1\n\n", 5, b);  // a misspelt field, and so an event without data
  ASSERT_EQ(b.problems().size(), 2u);
  EXPECT_NE(b.problems()[0].find("unknown field 'dat'"), std::string::npos);
  EXPECT_NE(b.problems()[1].find("no data field"), std::string::npos);
}

// Reference values from numpy.percentile (linear interpolation, its default).
TEST(GateStats, PercentilesAsNumpy) {
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4}, 50), 2.5);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 95), 9.55);
  EXPECT_DOUBLE_EQ(percentile({10, 1, 7}, 95), 9.7);  // unsorted input
  EXPECT_DOUBLE_EQ(percentile({5}, 95), 5);
  EXPECT_TRUE(std::isnan(percentile({}, 50)));
  EXPECT_DOUBLE_EQ(mean({1, 2, 6}), 3);
}

json good_chat() {
  return json::parse(R"({"id":"c1","object":"chat.completion","created":1,"model":"m",
    "choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],
    "usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}})");
}

TEST(GateShapes, ChatCompletionEachMemberCanFail) {
  EXPECT_TRUE(check_chat_completion(good_chat()).empty());
  struct Case {
    const char* pointer;
    json value;
    const char* expect;
  } cases[] = {{"/object", "chat_completion", "object is \"chat_completion\""},
               {"/created", "1", "created is a string"},
               {"/choices/0/message/role", "user", "role is \"user\""},
               {"/choices/0/message/content", 5, "content is a number"},
               {"/choices/0/finish_reason", "done", "finish_reason is \"done\""},
               {"/usage/total_tokens", 5, "not prompt_tokens + completion_tokens"},
               {"/choices", json::array(), "choices is empty"}};
  for (const auto& c : cases) {
    json j = good_chat();
    j[json::json_pointer(c.pointer)] = c.value;
    const Problems p = check_chat_completion(j);
    ASSERT_FALSE(p.empty()) << c.pointer;
    EXPECT_NE(p[0].find(c.expect), std::string::npos) << p[0];
  }
  json j = good_chat();
  j.erase("usage");
  EXPECT_EQ(check_chat_completion(j), Problems{"usage is missing"});
  EXPECT_FALSE(check_chat_completion(json::array()).empty());
}

TEST(GateShapes, ErrorObjectModelsAndCompletion) {
  EXPECT_TRUE(check_error_object(json::parse(R"({"error":{"message":"m","type":"t","param":null,"code":null}})")).empty());
  EXPECT_FALSE(check_error_object(json::parse(R"({"error":"bad"})")).empty());
  EXPECT_FALSE(check_error_object(json::parse(R"({"error":{"message":"m","type":"t"}})")).empty());  // no param, code
  EXPECT_TRUE(check_models(json::parse(R"({"object":"list","data":[{"id":"m","object":"model","created":0,"owned_by":"me"}]})")).empty());
  EXPECT_FALSE(check_models(json::parse(R"({"object":"list","data":[]})")).empty());
  EXPECT_FALSE(check_completion(good_chat()).empty());  // a chat completion is not a text completion
}

TEST(GateShapes, StreamRules) {
  auto chunk = [](const std::string& content, json finish) {
    return json({{"id", "s"}, {"object", "chat.completion.chunk"}, {"created", 1}, {"model", "m"},
                 {"choices", {{{"index", 0}, {"delta", {{"content", content}}}, {"finish_reason", finish}}}}})
        .dump();
  };
  const std::string usage = R"({"id":"s","object":"chat.completion.chunk","created":1,"model":"m","choices":[],
    "usage":{"prompt_tokens":2,"completion_tokens":2,"total_tokens":4}})";
  StreamSummary ok;
  for (const auto& d : {chunk("a", nullptr), chunk("b", "stop"), usage, std::string("[DONE]")}) add_chat_event(ok, d);
  finish_chat_stream(ok, true);
  EXPECT_TRUE(ok.problems.empty()) << ok.problems[0];
  EXPECT_EQ(ok.content, "ab");
  EXPECT_EQ(ok.completion_tokens, 2);

  StreamSummary no_done;
  for (const auto& d : {chunk("a", "stop"), usage}) add_chat_event(no_done, d);
  finish_chat_stream(no_done, true);
  ASSERT_EQ(no_done.problems.size(), 1u);
  EXPECT_NE(no_done.problems[0].find("[DONE]"), std::string::npos);

  StreamSummary after_done;
  for (const auto& d : {chunk("a", "stop"), usage, std::string("[DONE]"), chunk("b", nullptr)}) add_chat_event(after_done, d);
  finish_chat_stream(after_done, true);
  ASSERT_FALSE(after_done.problems.empty());
  EXPECT_NE(after_done.problems[0].find("after data: [DONE]"), std::string::npos);

  StreamSummary no_usage;
  for (const auto& d : {chunk("a", "stop"), std::string("[DONE]")}) add_chat_event(no_usage, d);
  finish_chat_stream(no_usage, true);
  ASSERT_EQ(no_usage.problems.size(), 1u);
  EXPECT_NE(no_usage.problems[0].find("include_usage"), std::string::npos);

  StreamSummary deep;
  add_chat_event(deep, std::string(100, '[') + std::string(100, ']'));
  ASSERT_EQ(deep.problems.size(), 1u);
  EXPECT_NE(deep.problems[0].find("deeper than"), std::string::npos);
}

// ---- the whole gate against a fake server ----

// A small OpenAI-compatible server with named faults; with none it is correct, and the gate
// must pass it (the gate checks the protocol, not Spore).
class Fake {
 public:
  std::set<std::string> faults;
  std::atomic<int> streams{0};
  int port = 0;

  Fake() {
    s_.Get("/health", [this](const httplib::Request&, httplib::Response& r) {
      if (has("health_text")) return r.set_content("OK", "text/plain");
      r.set_content(R"({"status":"ok"})", "application/json");
    });
    s_.Get("/v1/models", [this](const httplib::Request&, httplib::Response& r) {
      json m = {{"object", has("models_object") ? "models" : "list"},
                {"data", {{{"id", "fake"}, {"object", "model"}, {"created", 0}, {"owned_by", "test"}}}}};
      r.set_content(m.dump(), "application/json");
    });
    s_.Post("/v1/chat/completions", [this](const httplib::Request& q, httplib::Response& r) { chat(q, r); });
    s_.Post("/v1/completions", [this](const httplib::Request& q, httplib::Response& r) {
      json body = json::parse(q.body, nullptr, false);
      if (body.is_discarded()) return error(r, 400, "not JSON");
      json j = {{"id", "cmpl-1"}, {"object", has("completion_object") ? "chat.completion" : "text_completion"},
                {"created", 1}, {"model", "fake"},
                {"choices", {{{"index", 0}, {"text", " Paris."}, {"finish_reason", "stop"}}}},
                {"usage", {{"prompt_tokens", 5}, {"completion_tokens", 2}, {"total_tokens", 7}}}};
      r.set_content(j.dump(), "application/json");
    });
    s_.set_error_handler([this](const httplib::Request&, httplib::Response& r) {
      if (r.status == 404 && !has("route_text")) error(r, 404, "no such route");
    });
    port = s_.bind_to_any_port("127.0.0.1");
    t_ = std::thread([this] { s_.listen_after_bind(); });
    while (!s_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~Fake() {
    s_.stop();
    t_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }

 private:
  bool has(const std::string& f) const { return faults.count(f) > 0; }
  static void error(httplib::Response& r, int status, const std::string& m) {
    r.status = status;
    r.set_content(json({{"error", {{"message", m}, {"type", "invalid_request_error"}, {"param", nullptr}, {"code", nullptr}}}}).dump(),
                  "application/json");
  }
  void chat(const httplib::Request& q, httplib::Response& r) {
    json body = json::parse(q.body, nullptr, false);
    if (body.is_discarded()) {
      if (has("malformed_500")) {
        r.status = 500;
        return r.set_content("<html>oops</html>", "text/html");
      }
      return error(r, 400, "not JSON");
    }
    if (body.value("model", "") != "fake" && !has("any_model")) return error(r, 404, "no such model");
    if (!body.value("stream", false)) {
      json j = {{"id", "c1"}, {"object", "chat.completion"}, {"created", 1}, {"model", "fake"},
                {"choices", {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", "Hello there"}}}, {"finish_reason", "stop"}}}},
                {"usage", {{"prompt_tokens", 5}, {"completion_tokens", 2}, {"total_tokens", has("usage_sum") ? 8 : 7}}}};
      if (has("no_usage")) j.erase("usage");
      return r.set_content(j.dump(), "application/json");
    }
    const int n = streams.fetch_add(1);
    if (has("load_500") && n % 3 == 2) return error(r, 500, "overloaded");
    std::string out;
    auto chunk = [](json delta, json finish) {
      return "data: " + json({{"id", "s1"}, {"object", "chat.completion.chunk"}, {"created", 1}, {"model", "fake"},
                              {"choices", {{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}}}})
                            .dump() + "\n\n";
    };
    out += chunk({{"role", "assistant"}, {"content", ""}}, nullptr);
    out += chunk({{"content", "Red"}}, nullptr);
    out += chunk({{"content", ", blue"}}, "stop");
    if (!has("sse_no_usage"))
      out += "data: " + json({{"id", "s1"}, {"object", "chat.completion.chunk"}, {"created", 1}, {"model", "fake"},
                              {"choices", json::array()},
                              {"usage", {{"prompt_tokens", 5}, {"completion_tokens", 2}, {"total_tokens", 7}}}})
                            .dump() + "\n\n";
    if (!has("sse_no_done")) out += "data: [DONE]\n\n";
    r.set_content(out, has("sse_json_type") ? "application/json" : "text/event-stream");
  }
  httplib::Server s_;
  std::thread t_;
};

GateResult gate_on(const Fake& f, int requests = 6) {
  GateOptions o;
  o.url = f.url();
  o.requests = requests;
  o.concurrency = 3;
  o.timeout_s = 20;
  o.wait_s = 0;
  return run_gate(o);
}

const CheckResult& check(const GateResult& r, const std::string& name) {
  for (const auto& c : r.checks)
    if (c.name == name) return c;
  throw std::runtime_error("no check " + name);
}

// The verdicts as "name=verdict" for a readable failure message.
std::string verdicts(const GateResult& r) {
  std::string s;
  for (const auto& c : r.checks) s += c.name + "=" + c.verdict + " (" + c.reason + ")\n";
  return s;
}

TEST(GateFake, CorrectServerPassesEveryCheck) {
  Fake f;
  const GateResult r = gate_on(f);
  EXPECT_TRUE(r.passed()) << verdicts(r);
  EXPECT_EQ(r.checks.size(), 9u);
  EXPECT_EQ(r.model, "fake");
  EXPECT_EQ(r.load.failed, 0);
  EXPECT_EQ(r.load.completion_tokens, 6 * 2);
  EXPECT_GT(r.load.ttft_p50_ms, 0);
  EXPECT_LE(r.load.ttft_p50_ms, r.load.total_p50_ms);
  // The report is valid against its committed schema, and the screen shows the chapter's figures.
  GateOptions o;
  o.argv = {"spore", "gate"};
  const json report = gate_report(r, o);
  const auto schema = spore::probe::read_json(std::string(SPORE_SOURCE_DIR) + "/schemas/gate-report.schema.json");
  const auto errors = spore::probe::validate_schema(spore::probe::Json::parse(report.dump()), schema);
  EXPECT_TRUE(errors.empty()) << errors[0];
  EXPECT_EQ(report["verdict"], "observed-pass");
  const std::string screen = format_gate(r);
  EXPECT_NE(screen.find("655.5"), std::string::npos);
  EXPECT_NE(screen.find("1295.4"), std::string::npos);
  EXPECT_NE(screen.find("a different machine and model"), std::string::npos);
}

// Each fault fails exactly the check that should catch it.
TEST(GateFake, EachCheckCanFail) {
  const std::pair<const char*, const char*> cases[] = {
      {"models_object", "models"},         {"no_usage", "chat_json"},           {"usage_sum", "chat_json"},
      {"sse_no_done", "chat_sse"},         {"sse_no_usage", "chat_sse"},        {"sse_json_type", "chat_sse"},
      {"completion_object", "completion_json"}, {"malformed_500", "protocol_malformed_json"},
      {"any_model", "protocol_unknown_model"},  {"route_text", "protocol_unknown_route"}};
  for (const auto& [fault, name] : cases) {
    Fake f;
    f.faults = {fault};
    const GateResult r = gate_on(f, 3);
    EXPECT_FALSE(r.passed()) << fault;
    EXPECT_EQ(check(r, name).verdict, "observed-fail") << fault << "\n" << verdicts(r);
    EXPECT_FALSE(check(r, name).reason.empty());
    EXPECT_EQ(check(r, "health").verdict, "observed-pass") << fault;
  }
}

TEST(GateFake, FailedStreamsUnderLoadFailTheLoadCheck) {
  Fake f;
  f.faults = {"load_500"};
  const GateResult r = gate_on(f, 9);
  EXPECT_EQ(check(r, "load").verdict, "observed-fail") << verdicts(r);
  EXPECT_GE(r.load.failed, 2);
  EXPECT_NE(check(r, "load").reason.find("status 500"), std::string::npos) << check(r, "load").reason;
}

TEST(GateFake, HealthFailuresStopTheRest) {
  Fake f;
  f.faults = {"health_text"};
  GateResult r = gate_on(f);
  EXPECT_EQ(check(r, "health").verdict, "observed-fail");
  EXPECT_EQ(check(r, "load").verdict, "not-run");
  // Nothing listening at all: a transport error, named.
  GateOptions o;
  o.url = "http://127.0.0.1:1";
  o.wait_s = 0;
  r = run_gate(o);
  EXPECT_EQ(check(r, "health").verdict, "observed-fail");
  EXPECT_NE(check(r, "health").reason.find("no answer"), std::string::npos) << check(r, "health").reason;
  EXPECT_EQ(check(r, "models").verdict, "not-run");
  EXPECT_EQ(gate_report(r, o)["verdict"], "observed-fail");
}

// ---- against the real server ----

TEST(GateServe, SporeServePassesEveryCheck) {
  if (!have_model()) GTEST_SKIP() << "no model at " << model_path() << " (scripts/fetch-model.sh fetches it)";
  const std::string port_s = std::to_string(free_port());
  const pid_t pid = start_serve({"--port", port_s, "--slots", "2", "--ctx", "512", "--api-key", "k1", "--threads", "2"});
  GateOptions o;
  o.url = "http://127.0.0.1:" + port_s;
  o.api_key = "k1";
  o.requests = 4;
  o.concurrency = 2;
  o.max_tokens = 8;
  o.wait_s = 120;  // /health is 503 while the model loads
  // The server binds its socket before it answers; retry the connection for a moment.
  GateResult r;
  for (int i = 0; i < 50; ++i) {
    r = run_gate(o);
    if (check(r, "health").evidence.value("status", 0L) != 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  stop_serve(pid);
  EXPECT_TRUE(r.passed()) << verdicts(r);
  EXPECT_EQ(r.model, "SmolLM2-135M-Instruct.Q4_1");
  EXPECT_EQ(r.load.failed, 0);
  EXPECT_GT(r.load.completion_tokens, 0);
  EXPECT_LE(r.load.completion_tokens, 4 * 8);
}

}  // namespace
