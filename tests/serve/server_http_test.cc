// `spore serve` end to end: the real SmolLM2-135M-Instruct behind a spawned server on a free
// loopback port, spoken to over raw sockets and httplib's client. Skipped, with the reason,
// when the model file is absent (scripts/fetch-model.sh fetches it).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "serve/raw_http.h"
#include "serve/serve_suite.h"
#include "serve/serve_test_util.h"
#include "spore/nlp/generate.h"

namespace {

using nlohmann::json;
using namespace spore::test;
const char* kKey = "test-key-123";

// A raw HTTP/1.1 exchange (raw_http.h): the test sees the bytes as a curl user would.
std::string post_raw(const std::string& path, const std::string& body, bool auth = true) {
  std::string r = "POST " + path + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n";
  if (auth) r += std::string("Authorization: Bearer ") + kKey + "\r\n";
  return r + "Connection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}
// Removes HTTP chunked framing.
std::string dechunk(const std::string& body) {
  std::string out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t eol = body.find("\r\n", pos);
    if (eol == std::string::npos) break;
    size_t len = std::stoul(body.substr(pos, eol - pos), nullptr, 16);
    if (len == 0) break;
    out += body.substr(eol + 2, len);
    pos = eol + 2 + len + 2;
  }
  return out;
}

class Serve : public ServeSuite<Serve> {
 protected:
  static void SetUpTestSuite() {
    start_suite({"--slots", "2", "--queue", "1", "--ctx", "512", "--api-key", kKey, "--max-body", "65536", "--threads", "2"});
  }
  httplib::Client client() {
    httplib::Client c("127.0.0.1", port);
    c.set_bearer_token_auth(kKey);
    c.set_read_timeout(120, 0);
    return c;
  }
  json post(const std::string& path, const json& body, int want_status = 200) {
    auto c = client();
    auto r = c.Post(path.c_str(), body.dump(), "application/json");
    EXPECT_TRUE(r) << path;
    if (!r) return {};
    EXPECT_EQ(r->status, want_status) << r->body;
    EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
    return json::parse(r->body);
  }
  std::string metrics() {
    auto r = client().Get("/metrics");
    return r ? r->body : "";
  }
  static double metric_in(const std::string& text, const std::string& name) {
    std::smatch m;
    if (std::regex_search(text, m, std::regex("\n" + name + " ([0-9.e+-]+)\n"))) return std::stod(m[1]);
    return -1;
  }
  double metric(const std::string& name) { return metric_in(metrics(), name); }
  // Active slots and queue depth from ONE scrape: the worker updates both under one lock, so
  // this is a state the server was in; two scrapes could straddle a step (issue 25's flake read
  // 0 active, then 0 queued just after the queued request took a slot).
  bool slots_and_queue_are(double active, double queued) {
    const std::string m = metrics();
    return metric_in(m, "spore_active_slots") == active && metric_in(m, "spore_queue_depth") == queued;
  }
};

void expect_error_object(const json& j) {
  ASSERT_TRUE(j.contains("error")) << j.dump();
  for (const char* k : {"message", "type", "param", "code"}) EXPECT_TRUE(j["error"].contains(k)) << k << " in " << j.dump();
}

TEST_F(Serve, HealthModelsAndAuth) {
  httplib::Client anon("127.0.0.1", port);
  auto h = anon.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  EXPECT_EQ(json::parse(h->body), json({{"status", "ok"}}));
  auto denied = anon.Get("/v1/models");
  ASSERT_TRUE(denied);
  EXPECT_EQ(denied->status, 401);
  expect_error_object(json::parse(denied->body));
  httplib::Client wrong("127.0.0.1", port);
  wrong.set_bearer_token_auth("test-key-124");
  EXPECT_EQ(wrong.Get("/v1/models")->status, 401);
  auto m = client().Get("/v1/models");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  const json j = json::parse(m->body);
  EXPECT_EQ(j["object"], "list");
  ASSERT_EQ(j["data"].size(), 1u);
  EXPECT_EQ(j["data"][0]["object"], "model");
  EXPECT_EQ(j["data"][0]["id"], "SmolLM2-135M-Instruct.Q4_1");
}

// The server's greedy completion equals the library's generate() on the same model: the HTTP
// layer, queue and batching add nothing to the text.
TEST_F(Serve, GreedyCompletionMatchesTheLibrary) {
  const std::string prompt = "The capital of France is";
  const json j = post("/v1/completions", {{"prompt", prompt}, {"max_tokens", 8}, {"temperature", 0}});
  EXPECT_EQ(j["object"], "text_completion");
  const auto m = spore::nlp::load_model(model_path(), {.require_tokenizer = true});
  spore::nlp::GenerateOptions o;
  o.max_tokens = 8;
  o.sampling.temperature = 0;
  const auto ref = spore::nlp::generate(m, prompt, o);
  EXPECT_EQ(j["choices"][0]["text"], ref.text);
  EXPECT_EQ(j["choices"][0]["finish_reason"], ref.finish == spore::nlp::FinishReason::kLength ? "length" : "stop");
  EXPECT_EQ(j["usage"]["prompt_tokens"], (int64_t)ref.prompt_tokens.size());
  EXPECT_EQ(j["usage"]["completion_tokens"], (int64_t)ref.tokens.size());
  EXPECT_EQ(j["usage"]["total_tokens"], (int64_t)(ref.prompt_tokens.size() + ref.tokens.size()));
  for (const char* k : {"prompt_n", "prompt_ms", "predicted_n", "predicted_ms", "predicted_per_second"})
    EXPECT_TRUE(j["timings"].contains(k)) << k;
}

// NOTE [Speculative decoding] per request: prompt lookup gives the library's plain greedy text,
// the timings count the drafts (llama.cpp's draft_n, draft_n_accepted), unknown types are 400.
TEST_F(Serve, SpeculativeRequestMatchesPlainGreedy) {
  const std::string prompt = "Repeat: one two three four five. Repeat: one two three four five. Repeat: one two";
  const json j = post("/v1/completions", {{"prompt", prompt}, {"max_tokens", 12}, {"temperature", 0},
                                          {"ignore_eos", true}, {"speculative", {{"type", "ngram"}, {"n_max", 4}}}});
  const auto m = spore::nlp::load_model(model_path(), {.require_tokenizer = true});
  spore::nlp::GenerateOptions o;
  o.max_tokens = 12;
  o.sampling.temperature = 0;
  o.ignore_eos = true;
  EXPECT_EQ(j["choices"][0]["text"], spore::nlp::generate(m, prompt, o).text);
  EXPECT_GT(j["timings"]["draft_n_accepted"].get<int64_t>(), 0) << j.dump();
  EXPECT_LE(j["timings"]["draft_n_accepted"].get<int64_t>(), j["timings"]["draft_n"].get<int64_t>());
  const json plain = post("/v1/completions", {{"prompt", prompt}, {"max_tokens", 4}, {"temperature", 0}});
  EXPECT_EQ(plain["timings"]["draft_n"], 0);  // the server's default: none
}

TEST_F(Serve, ChatJsonLogprobsAndSeed) {
  const json req = {{"model", "SmolLM2-135M-Instruct.Q4_1"},
                    {"messages", {{{"role", "user"}, {"content", "Name a colour."}}}},
                    {"max_tokens", 6}, {"temperature", 1.0}, {"seed", 1234}, {"logprobs", true}, {"top_logprobs", 2}};
  const json a = post("/v1/chat/completions", req);
  const json b = post("/v1/chat/completions", req);
  EXPECT_EQ(a["object"], "chat.completion");
  EXPECT_EQ(a["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(a["choices"][0]["message"]["content"], b["choices"][0]["message"]["content"]) << "seed must reproduce";
  const json& lp = a["choices"][0]["logprobs"]["content"];
  ASSERT_EQ((int64_t)lp.size(), a["usage"]["completion_tokens"].get<int64_t>());
  std::string joined;
  for (const json& t : lp) {
    EXPECT_LE(t["logprob"].get<double>(), 0.0);
    EXPECT_EQ(t["top_logprobs"].size(), 2u);
    // The top alternative is at least as likely as any other listed.
    EXPECT_GE(t["top_logprobs"][0]["logprob"].get<double>(), t["top_logprobs"][1]["logprob"].get<double>());
    joined += t["token"].get<std::string>();
  }
  // A token that ends inside a UTF-8 character reads as U+FFFD on its own; otherwise the
  // tokens spell the answer.
  if (joined.find("\xEF\xBF\xBD") == std::string::npos) {
    EXPECT_EQ(joined, a["choices"][0]["message"]["content"]);
  }
}

// SSE framing on the wire: every event is "data: <json>\n\n", the deltas add up to the JSON
// answer's text, the finish chunk, then the usage chunk (choices empty), then [DONE].
TEST_F(Serve, StreamFramingAndUsage) {
  const json base = {{"messages", {{{"role", "user"}, {"content", "Say hello."}}}}, {"max_tokens", 8}, {"temperature", 0}};
  const json whole = post("/v1/chat/completions", base);
  json sreq = base;
  sreq["stream"] = true;
  sreq["stream_options"] = {{"include_usage", true}};
  int fd = connect_to(port);
  ASSERT_GE(fd, 0);
  send_all(fd, post_raw("/v1/chat/completions", sreq.dump()));
  const std::string raw = read_all(fd);
  close(fd);
  const size_t head_end = raw.find("\r\n\r\n");
  ASSERT_NE(head_end, std::string::npos);
  const std::string head = raw.substr(0, head_end);
  EXPECT_NE(head.find("HTTP/1.1 200"), std::string::npos) << head;
  EXPECT_NE(head.find("Content-Type: text/event-stream"), std::string::npos) << head;
  const std::string body = dechunk(raw.substr(head_end + 4));
  std::vector<std::string> events;
  size_t pos = 0;
  while (pos < body.size()) {
    const size_t end = body.find("\n\n", pos);
    ASSERT_NE(end, std::string::npos) << "an event without its blank line: " << body.substr(pos);
    const std::string ev = body.substr(pos, end - pos);
    ASSERT_EQ(ev.rfind("data: ", 0), 0u) << ev;
    events.push_back(ev.substr(6));
    pos = end + 2;
  }
  ASSERT_GE(events.size(), 4u);
  EXPECT_EQ(events.back(), "[DONE]");
  std::string text;
  for (size_t i = 0; i + 3 < events.size(); ++i) {
    const json c = json::parse(events[i]);
    EXPECT_EQ(c["object"], "chat.completion.chunk");
    EXPECT_TRUE(c["choices"][0]["finish_reason"].is_null());
    if (i == 0) {
      EXPECT_EQ(c["choices"][0]["delta"]["role"], "assistant");
    }
    text += c["choices"][0]["delta"].value("content", "");
  }
  const json fin = json::parse(events[events.size() - 3]);
  EXPECT_EQ(fin["choices"][0]["finish_reason"], whole["choices"][0]["finish_reason"]);
  const json usage = json::parse(events[events.size() - 2]);
  EXPECT_TRUE(usage["choices"].empty());
  for (const char* k : {"prompt_tokens", "completion_tokens", "total_tokens"}) EXPECT_EQ(usage["usage"][k], whole["usage"][k]) << k;
  // The same conversation again: all but its last two prompt tokens came from the prefix cache.
  EXPECT_EQ(usage["usage"]["prompt_tokens_details"]["cached_tokens"], whole["usage"]["prompt_tokens"].get<int64_t>() - 2);
  EXPECT_EQ(text, whole["choices"][0]["message"]["content"]);
}

TEST_F(Serve, TokenizeDetokenizeTemplate) {
  const json t = post("/tokenize", {{"content", "Hello world"}});
  ASSERT_FALSE(t["tokens"].empty());
  const json d = post("/detokenize", {{"tokens", t["tokens"]}});
  EXPECT_EQ(d["content"], "Hello world");
  const json p = post("/apply-template", {{"messages", {{{"role", "user"}, {"content", "Hi there"}}}}});
  const std::string prompt = p["prompt"];
  EXPECT_NE(prompt.find("Hi there"), std::string::npos);
  EXPECT_NE(prompt.find("<|im_start|>assistant"), std::string::npos) << prompt;
  expect_error_object(post("/detokenize", {{"tokens", {-5}}}, 400));
}

TEST_F(Serve, ErrorCatalogueOverHttp) {
  auto c = client();
  auto r = c.Get("/v2/nothing");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  expect_error_object(json::parse(r->body));
  r = c.Post("/v1/chat/completions", std::string(70000, ' '), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  expect_error_object(json::parse(r->body));
  r = c.Post("/v1/chat/completions", "{not json", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  expect_error_object(json::parse(r->body));
  // A prompt over the context (512 tokens per slot here).
  std::string longtext;
  for (int i = 0; i < 700; ++i) longtext += "word ";
  const json e = post("/v1/completions", {{"prompt", longtext}}, 400);
  expect_error_object(e);
  EXPECT_EQ(e["error"]["code"], "context_length_exceeded");
  expect_error_object(post("/v1/chat/completions", {{"messages", json::array()}}, 400));
  expect_error_object(post("/v1/completions", {{"prompt", "x"}, {"temperature", -1}}, 400));
}

// Two slots, one queue place: a fourth stream gets 503 + Retry-After; closing the streams frees
// every slot at once (read back from /metrics), and the server still answers.
TEST_F(Serve, QueueFullAndDisconnectFreesSlots) {
  const json req = {{"prompt", "Once upon a time"}, {"max_tokens", 400}, {"ignore_eos", true}, {"stream", true}};
  std::vector<int> fds;
  for (int i = 0; i < 3; ++i) {
    int fd = connect_to(port);
    ASSERT_GE(fd, 0);
    send_all(fd, post_raw("/v1/completions", req.dump()));
    fds.push_back(fd);
    if (i < 2) {  // wait for its first bytes, so it holds a slot before the next comes
      char buf[256];
      ASSERT_GT(recv(fds.back(), buf, sizeof buf, 0), 0);
    }
  }
  // The first step (both prefills) may take seconds on a loaded machine.
  for (int i = 0; i < 3000 && !slots_and_queue_are(2, 1); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(slots_and_queue_are(2, 1)) << metrics();
  auto r = client().Post("/v1/completions", req.dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->get_header_value("Retry-After"), "1");
  expect_error_object(json::parse(r->body));
  for (int fd : fds) close(fd);
  const auto t0 = std::chrono::steady_clock::now();
  // The queued stream's client left too: it is dropped from the queue, or (when the running ones
  // freed their slots first) refused at admission, never given a slot. Once a scrape shows
  // nothing running or waiting, nothing can start again.
  while (!slots_and_queue_are(0, 0) && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(120))  // sanitized builds are slow
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const std::string after = metrics();
  EXPECT_EQ(metric_in(after, "spore_active_slots"), 0) << after;
  EXPECT_EQ(metric_in(after, "spore_queue_depth"), 0) << after;
  EXPECT_EQ(metric_in(after, "spore_kv_cache_tokens_used"), 0) << after;
  EXPECT_TRUE(slots_and_queue_are(0, 0)) << metrics();
  EXPECT_GE(metric("spore_queue_full_total"), 1);
  // Cancelled streams did not run to max_tokens: far fewer than 3 x 400 tokens were generated.
  EXPECT_LT(metric("spore_generated_tokens_total"), 1000);
  const json ok = post("/v1/completions", {{"prompt", "Hi"}, {"max_tokens", 2}});
  EXPECT_EQ(ok["choices"].size(), 1u);
}

// Clients that send a byte and stall hold one connection each, never the others' requests.
TEST_F(Serve, StalledClientsDoNotBlockOthers) {
  std::vector<int> stalled;
  for (int i = 0; i < 3; ++i) {
    int fd = connect_to(port);
    ASSERT_GE(fd, 0);
    send_all(fd, "P");
    stalled.push_back(fd);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const json ok = post("/v1/completions", {{"prompt", "Hi"}, {"max_tokens", 2}});
  EXPECT_EQ(ok["choices"].size(), 1u);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
  for (int fd : stalled) close(fd);
}

// A repeated system prompt is served from the prefix cache: the second request reports the reused
// tokens in OpenAI's usage.prompt_tokens_details.cached_tokens and llama.cpp's timings.cache_n,
// and /metrics counts the hit.
TEST_F(Serve, PrefixCacheHitOnARepeatedSystemPrompt) {
  const std::string system =
      "You are a careful assistant for a team of engineers. Answer in one short sentence, name units, "
      "and never invent figures you were not given.";
  auto ask = [&](const std::string& question) {
    return post("/v1/chat/completions", {{"messages", {{{"role", "system"}, {"content", system}},
                                                       {{"role", "user"}, {"content", question}}}},
                                         {"max_tokens", 4}, {"temperature", 0}});
  };
  const double hits_before = metric("spore_prefix_cache_hits_total");
  ask("What is a kilowatt?");
  const json second = ask("What is a newton?");
  const json sys_tokens = post("/tokenize", {{"content", system}});
  const int64_t cached = second["usage"]["prompt_tokens_details"]["cached_tokens"];
  // At least the system prompt's tokens (the template's header adds a few, the question's differ).
  EXPECT_GE(cached, (int64_t)sys_tokens["tokens"].size()) << second.dump();
  EXPECT_LT(cached, second["usage"]["prompt_tokens"].get<int64_t>());
  EXPECT_EQ(second["timings"]["cache_n"], cached);
  EXPECT_EQ(second["timings"]["prompt_n"].get<int64_t>() + cached, second["usage"]["prompt_tokens"].get<int64_t>());
  EXPECT_GE(metric("spore_prefix_cache_hits_total"), hits_before + 1);
  EXPECT_GE(metric("spore_prefix_cache_cached_tokens_total"), (double)cached);
  // Both requests are done: their slots keep their rows (prompt and fed answer tokens) for reuse.
  EXPECT_GE(metric("spore_prefix_cache_tokens_held"), second["usage"]["prompt_tokens"].get<double>());
}

// A JSON (non-streamed) request whose client closes its socket: the job is cancelled and its slot
// is free again long before max_tokens would have run out; /metrics counts the disconnect.
TEST_F(Serve, JsonClientThatLeavesFreesItsSlot) {
  const json req = {{"prompt", "Once upon a time"}, {"max_tokens", 400}, {"ignore_eos", true}};
  const double generated_before = metric("spore_generated_tokens_total");
  int fd = connect_to(port);
  ASSERT_GE(fd, 0);
  send_all(fd, post_raw("/v1/completions", req.dump()));
  for (int i = 0; i < 3000 && metric("spore_active_slots") != 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(metric("spore_active_slots"), 1);
  close(fd);
  const auto t0 = std::chrono::steady_clock::now();
  while (metric("spore_active_slots") != 0 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(120))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(metric("spore_active_slots"), 0);
  EXPECT_LT(metric("spore_generated_tokens_total") - generated_before, 300) << "the request ran on after its client left";
  const std::string m = metrics();
  EXPECT_NE(m.find("spore_client_disconnects_total{route=\"/v1/completions\"} 1"), std::string::npos) << m;
  for (int i = 0; i < 100 && metrics().find("status=\"499\"") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_NE(metrics().find("spore_requests_total{route=\"/v1/completions\",status=\"499\"} 1"), std::string::npos);
}

// A request still waiting in the queue whose client leaves is dropped from the queue.
TEST_F(Serve, QueuedJsonClientThatLeavesIsDropped) {
  const json slow = {{"prompt", "Once upon a time"}, {"max_tokens", 400}, {"ignore_eos", true}};
  std::vector<int> busy;
  for (int i = 0; i < 2; ++i) {  // both slots generating
    busy.push_back(connect_to(port));
    send_all(busy.back(), post_raw("/v1/completions", slow.dump()));
  }
  for (int i = 0; i < 3000 && metric("spore_active_slots") != 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  int queued = connect_to(port);
  send_all(queued, post_raw("/v1/completions", slow.dump()));
  for (int i = 0; i < 3000 && metric("spore_queue_depth") != 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(metric("spore_queue_depth"), 1);
  close(queued);
  const auto t0 = std::chrono::steady_clock::now();
  while (metric("spore_queue_depth") != 0 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(metric("spore_queue_depth"), 0);
  EXPECT_EQ(metric("spore_active_slots"), 2) << "the queued request's leaving must not touch the running ones";
  for (int fd : busy) close(fd);
  while (metric("spore_active_slots") != 0 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(120))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(metric("spore_active_slots"), 0);
}

TEST_F(Serve, MetricsText) {
  post("/v1/completions", {{"prompt", "Hi"}, {"max_tokens", 2}});
  // httplib's logger, which counts a request, runs after the answer is written: the client can
  // read the answer before the count lands, so wait for it (a bounded wait, never a pass by default).
  const std::string line = "spore_requests_total{route=\"/v1/completions\",status=\"200\"}";
  std::string m = metrics();
  for (int i = 0; i < 250 && m.find(line) == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    m = metrics();
  }
  EXPECT_NE(m.find(line), std::string::npos) << m;
  for (const char* name : {"# TYPE spore_time_to_first_token_seconds histogram", "spore_time_per_output_token_seconds_bucket",
                           "spore_prompt_tokens_total", "spore_kv_cache_tokens_capacity 1024", "spore_slots 2"})
    EXPECT_NE(m.find(name), std::string::npos) << name;
  auto page = client().Get("/");
  ASSERT_TRUE(page);
  EXPECT_NE(page->body.find("/v1/chat/completions"), std::string::npos);
}

}  // namespace

namespace {
// SmolLM2's chat template does not render tools, so the model could never call them: a request
// with tools is refused saying why (it used to answer 200 with the tools silently dropped, issue
// 25), streamed or not; with "tool_choice": "none" the same conversation is served, and the
// stream's text equals the JSON answer's.
TEST_F(Serve, ToolsTheTemplateDropsAreRefused) {
  const json tools = json::parse(R"([{"type":"function","function":{"name":"get_weather","description":"Weather in a city",
      "parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}])");
  json req = {{"messages", {{{"role", "user"}, {"content", "Weather in Paris?"}}}}, {"max_tokens", 8},
              {"temperature", 0}, {"tools", tools}};
  for (bool stream : {false, true}) {
    req["stream"] = stream;
    const json e = post("/v1/chat/completions", req, 400);
    expect_error_object(e);
    EXPECT_EQ(e["error"]["code"], "tools_not_supported") << e.dump();
    EXPECT_EQ(e["error"]["param"], "tools");
  }
  req["tool_choice"] = "none";
  req["stream"] = false;
  const json whole = post("/v1/chat/completions", req);
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "length");
  req["stream"] = true;
  auto r = client().Post("/v1/chat/completions", req.dump(), "application/json");
  ASSERT_TRUE(r);
  std::string content;
  for (size_t pos = 0; (pos = r->body.find("data: ", pos)) != std::string::npos;) {
    const size_t end = r->body.find("\n\n", pos);
    const std::string data = r->body.substr(pos + 6, end - pos - 6);
    pos = end;
    if (data == "[DONE]") break;
    const json chunk = json::parse(data);
    const json& d = chunk["choices"][0]["delta"];
    if (d.contains("content") && d["content"].is_string()) content += d["content"].get<std::string>();
  }
  EXPECT_EQ(content, whole["choices"][0]["message"]["content"]);
}

// Structured outputs (issue 29, NOTE [Grammars]): a json_schema answer parses and has the
// schema's fields and types; a forced tool call is a call to the declared tool with arguments under
// its schema, streamed or not, though SmolLM2's template does not show tools; `grammar` holds a
// completion to a language checked by std::regex; bad grammars and schemas are 400s.
TEST_F(Serve, StructuredOutputsToolCallsAndGrammars) {
  const json schema = json::parse(R"({"type":"object","properties":{"name":{"type":"string","maxLength":16},
      "age":{"type":"integer","minimum":0,"maximum":120},"pets":{"type":"array","items":{"enum":["cat","dog"]},"maxItems":2}},
      "required":["name","age","pets"],"additionalProperties":false})");
  json req = {{"messages", {{{"role", "user"}, {"content", "Describe a person."}}}}, {"max_tokens", 120}, {"temperature", 0},
              {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "person"}, {"schema", schema}, {"strict", true}}}}}};
  const json a = post("/v1/chat/completions", req);
  ASSERT_EQ(a["choices"][0]["finish_reason"], "stop") << a.dump();
  const json person = json::parse(a["choices"][0]["message"]["content"].get<std::string>());
  EXPECT_EQ(person.size(), 3u);
  EXPECT_TRUE(person["name"].is_string() && person["name"].get<std::string>().size() <= 16 * 4);
  EXPECT_TRUE(person["age"].is_number_integer() && person["age"] >= 0 && person["age"] <= 120) << person.dump();
  EXPECT_TRUE(person["pets"].is_array() && person["pets"].size() <= 2);
  for (const json& p : person["pets"]) EXPECT_TRUE(p == "cat" || p == "dog") << person.dump();

  // json_object: an object, no Markdown fence around it (what the issue saw before).
  json obj = {{"messages", {{{"role", "user"}, {"content", "Give me a JSON object with a name and an age."}}}},
              {"max_tokens", 100}, {"temperature", 0}, {"response_format", {{"type", "json_object"}}}};
  const json o = post("/v1/chat/completions", obj);
  ASSERT_EQ(o["choices"][0]["finish_reason"], "stop") << o.dump();
  EXPECT_TRUE(json::parse(o["choices"][0]["message"]["content"].get<std::string>()).is_object()) << o.dump();

  const json tools = json::parse(R"([{"type":"function","function":{"name":"get_weather","description":"Weather in a city",
      "parameters":{"type":"object","properties":{"city":{"type":"string","maxLength":20},"days":{"type":"integer","minimum":1,"maximum":7}},
      "required":["city","days"],"additionalProperties":false}}}])");
  json call = {{"messages", {{{"role", "user"}, {"content", "Weather in Paris?"}}}}, {"max_tokens", 150}, {"temperature", 0},
               {"tools", tools}, {"tool_choice", "required"}, {"parallel_tool_calls", false}};
  const json c = post("/v1/chat/completions", call);
  EXPECT_EQ(c["choices"][0]["finish_reason"], "tool_calls") << c.dump();
  const json& calls = c["choices"][0]["message"]["tool_calls"];
  ASSERT_EQ(c["choices"][0]["finish_reason"], "tool_calls") << c.dump();
  ASSERT_EQ(calls.size(), 1u) << c.dump();
  EXPECT_EQ(calls[0]["function"]["name"], "get_weather");
  const json args = json::parse(calls[0]["function"]["arguments"].get<std::string>());
  EXPECT_TRUE(args["city"].is_string());
  EXPECT_TRUE(args["days"].is_number_integer() && args["days"] >= 1 && args["days"] <= 7) << args.dump();
  // The same streamed: the call arrives as a tool_calls delta.
  call["stream"] = true;
  auto r = client().Post("/v1/chat/completions", call.dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->body.find("\"tool_calls\""), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("\"finish_reason\":\"tool_calls\""), std::string::npos) << r->body;

  const json g = post("/v1/completions", {{"prompt", "The answer is"}, {"max_tokens", 20}, {"temperature", 0},
                                          {"grammar", "root ::= \" \" (\"yes\" | \"no\") \", because \" [a-z]{1,8} \".\""}});
  const std::string text = g["choices"][0]["text"];
  EXPECT_TRUE(std::regex_match(text, std::regex(" (yes|no), because [a-z]{1,8}\\."))) << text;
  EXPECT_EQ(g["choices"][0]["finish_reason"], "stop");

  const json bad = post("/v1/completions", {{"prompt", "x"}, {"grammar", "root ::= root \"a\""}}, 400);
  expect_error_object(bad);
  EXPECT_EQ(bad["error"]["code"], "invalid_grammar");
  EXPECT_NE(bad["error"]["message"].get<std::string>().find("left-recursive"), std::string::npos);
  json catastrophic = req;
  catastrophic["response_format"] = {{"type", "json_schema"},
                                     {"json_schema", {{"name", "x"}, {"schema", {{"type", "string"}, {"pattern", "^(a+)+$"}}}}}};
  const json bad2 = post("/v1/chat/completions", catastrophic, 400);
  EXPECT_EQ(bad2["error"]["code"], "invalid_json_schema");
  EXPECT_EQ(bad2["error"]["param"], "response_format.json_schema.schema");
}

// Issue 25's hostile bodies: nesting far past the bound in every field the server parses is a 400
// json_too_deep (it used to kill the process), client mistakes are 4xx with the error object, and
// the server is still there afterwards.
TEST_F(Serve, HostileBodiesAreClientErrors) {
  const std::string deep = std::string(30000, '[') + std::string(30000, ']');  // 60 KB: under --max-body
  const std::string user = R"({"role":"user","content":"a"})";
  const std::pair<const char*, std::string> cases[] = {
      {"/v1/chat/completions", R"({"messages":[)" + user + R"(],"tools":)" + deep + "}"},
      {"/v1/chat/completions", R"({"messages":[{"role":"assistant","tool_calls":)" + deep + "}]}"},
      {"/v1/completions", R"({"prompt":"a","stop":)" + deep + "}"},
      {"/apply-template", R"({"messages":)" + deep + "}"},
      {"/apply-template", R"({"messages":[)" + user + R"(],"tools":)" + deep + "}"},
      {"/detokenize", R"({"tokens":)" + deep + "}"},
      {"/tokenize", R"({"content":"a","with_pieces":)" + deep + "}"},
  };
  for (const auto& [path, body] : cases) {
    auto r = client().Post(path, body, "application/json");
    ASSERT_TRUE(r) << path << ": no answer (the server died?)";
    EXPECT_EQ(r->status, 400) << path;
    const json e = json::parse(r->body);
    expect_error_object(e);
    EXPECT_EQ(e["error"]["code"], "json_too_deep") << path << " " << r->body;
  }
  // max_tokens 0 used to answer 500 generation_failed.
  for (const char* field : {"max_tokens", "max_completion_tokens"}) {
    const json e = post("/v1/completions", {{"prompt", "Hi"}, {field, 0}}, 400);
    expect_error_object(e);
    EXPECT_EQ(e["error"]["param"], field);
    EXPECT_EQ(e["error"]["code"], "invalid_value");
  }
  expect_error_object(post("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "a"}}}}, {"n", 0}}, 400));
  auto h = client().Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
}
}  // namespace

namespace {
// A model that cannot load: /health answers 503 with an error object while loading, then the
// server stops with exit status 1 and the reason (no model file is needed for this one).
TEST(ServeNoModel, ExitsWithTheReason) {
  const int p = free_port();
  const std::string bin = std::string(SPORE_BINARY_DIR) + "/bin/spore";
  const std::string cmd = bin + " serve --model /nonexistent/model.gguf --port " + std::to_string(p) + " 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  ASSERT_TRUE(f);
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, f)) out += buf;
  const int status = pclose(f);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << status << "\n" << out;
  EXPECT_NE(out.find("listening on http://127.0.0.1:" + std::to_string(p)), std::string::npos) << out;
  EXPECT_NE(out.find("the model failed to load"), std::string::npos) << out;
  EXPECT_NE(out.find("/nonexistent/model.gguf"), std::string::npos) << out;
}
}  // namespace

namespace {
// The start-up line of a server on a q4_0 GGUF (llama-quantize's, tests/fixtures/serve), with and
// without --no-repack: the line's resident figure is the repacked copy (NOTE [Repacked weights]),
// 0 with the flag.
std::string startup_line(const std::string& model, const std::string& extra) {
  const std::string bin = std::string(SPORE_BINARY_DIR) + "/bin/spore";
  // The shell prints its pid and becomes the server, so the test can stop it once the line is read.
  const std::string cmd = "sh -c 'echo $$; exec " + bin + " serve --port 0 --slots 1 --ctx 64 --threads 1 --model " + model +
                          " " + extra + "' 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return "";
  char buf[1024];
  std::string line;
  const long pid = fgets(buf, sizeof buf, f) ? std::atol(buf) : 0;
  while (fgets(buf, sizeof buf, f)) {
    line = buf;
    if (line.find("loaded in") != std::string::npos || line.find("failed") != std::string::npos) break;
  }
  if (pid > 0) kill((pid_t)pid, SIGTERM);
  while (fgets(buf, sizeof buf, f)) {
  }
  pclose(f);
  return line;
}

TEST(ServeRepack, NoRepackKeepsEveryWeightMapped) {
  const std::string model = std::string(SPORE_SOURCE_DIR) + "/tests/fixtures/serve/tiny-llama-q4_0.gguf";
  const std::string packed = startup_line(model, ""), mapped = startup_line(model, "--no-repack");
  ASSERT_NE(packed.find("loaded in"), std::string::npos) << packed;
  ASSERT_NE(mapped.find("loaded in"), std::string::npos) << mapped;
  EXPECT_NE(mapped.find("resident 0 B)"), std::string::npos) << mapped;
  EXPECT_EQ(packed.find("resident 0 B)"), std::string::npos) << packed;
  EXPECT_NE(packed.find("resident "), std::string::npos) << packed;
}
}  // namespace
