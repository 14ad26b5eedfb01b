// The gate's load phase: N streamed chat requests, C in flight at once, each timed from the
// request to its first content delta (time to first token) and to its last byte (total).
// Every stream is held to the same framing and shape checks as the chat_sse check; one that
// breaks them, or errs, counts as failed and fails the check (NOTE [Machine gate]).
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "gate/checks.h"
#include "gate/sse.h"
#include "gate/stats.h"

namespace spore::gate {

namespace {

using Clock = std::chrono::steady_clock;

struct One {
  bool ok = false;
  double ttft_ms = -1, total_ms = 0;
  long long tokens = 0;
  std::string failure;
};

One one_stream(const Target& t, int i) {
  One o;
  HttpRequest q;
  q.method = "POST";
  q.url = join_url(t.url, "/v1/chat/completions");
  // Prompts differ a little so that no server can answer every request from one cached result.
  q.body = stream_body(t, "Write one sentence about the number " + std::to_string(i) + ".");
  q.api_key = t.api_key;
  q.timeout_s = t.timeout_s;
  SseParser sse;
  StreamSummary s;
  const auto t0 = Clock::now();
  q.on_data = [&](const char* d, size_t n) {
    sse.feed(d, n);
    for (const auto& e : sse.take()) {
      const int before = s.content_chunks;
      add_chat_event(s, e.data);
      if (o.ttft_ms < 0 && s.content_chunks > before)
        o.ttft_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    }
  };
  const HttpResponse r = http_send(q);
  o.total_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  sse.finish();
  if (!r.error.empty()) {
    o.failure = "request " + std::to_string(i) + ": " + r.error;
    return o;
  }
  if (r.status != 200) {
    o.failure = "request " + std::to_string(i) + ": status " + std::to_string(r.status) + ": " + r.body.substr(0, 120);
    return o;
  }
  finish_chat_stream(s, true);
  Problems p = sse.problems();
  p.insert(p.end(), s.problems.begin(), s.problems.end());
  if (o.ttft_ms < 0) p.push_back("no content delta came");
  if (!p.empty()) {
    o.failure = "request " + std::to_string(i) + ": " + p[0];
    return o;
  }
  o.tokens = s.completion_tokens;
  o.ok = true;
  return o;
}

}  // namespace

CheckResult check_load(const Target& t, int requests, int concurrency, LoadFigures& f) {
  CheckResult c;
  c.name = "load";
  c.description = std::to_string(requests) + " streamed chat requests, " + std::to_string(concurrency) +
                  " at a time: every one completes with valid chunks, usage and [DONE]";
  std::vector<One> all((size_t)requests);
  std::atomic<int> next{0};
  const auto t0 = Clock::now();
  std::vector<std::thread> workers;
  for (int w = 0; w < concurrency && w < requests; ++w)
    workers.emplace_back([&] {
      for (int i; (i = next.fetch_add(1)) < requests;) all[(size_t)i] = one_stream(t, i);
    });
  for (auto& w : workers) w.join();
  f.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  f.requests = requests;
  f.concurrency = concurrency;
  f.max_tokens = t.max_tokens;
  std::vector<double> ttft, total, per_stream, decode;
  for (const One& o : all) {
    if (!o.ok) {
      ++f.failed;
      if (f.failures.size() < 5) f.failures.push_back(o.failure);
      continue;
    }
    ttft.push_back(o.ttft_ms);
    total.push_back(o.total_ms);
    f.completion_tokens += o.tokens;
    per_stream.push_back((double)o.tokens / (o.total_ms / 1000.0));
    if (o.tokens > 1 && o.total_ms > o.ttft_ms) decode.push_back((double)(o.tokens - 1) / ((o.total_ms - o.ttft_ms) / 1000.0));
  }
  f.ttft_p50_ms = percentile(ttft, 50);
  f.ttft_p95_ms = percentile(ttft, 95);
  f.total_p50_ms = percentile(total, 50);
  f.total_p95_ms = percentile(total, 95);
  f.stream_tokens_per_s_p50 = percentile(per_stream, 50);
  f.decode_tokens_per_s_p50 = percentile(decode, 50);
  f.aggregate_tokens_per_s = f.wall_s > 0 ? (double)f.completion_tokens / f.wall_s : 0;
  c.duration_ms = f.wall_s * 1000;
  c.evidence = {{"requests", requests}, {"concurrency", concurrency}, {"failed", f.failed}, {"failures", f.failures},
                {"completion_tokens", f.completion_tokens}, {"wall_s", f.wall_s}};
  if (f.failed == 0 && requests > 0) {
    c.verdict = "observed-pass";
    c.reason = std::to_string(requests) + " of " + std::to_string(requests) + " streams complete";
  } else {
    c.verdict = "observed-fail";
    c.reason = requests == 0 ? "no request was made (--requests 0)"
                             : std::to_string(f.failed) + " of " + std::to_string(requests) + " requests failed; first: " +
                                   (f.failures.empty() ? "" : f.failures[0]);
  }
  return c;
}

}  // namespace spore::gate
