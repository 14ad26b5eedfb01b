// run_gate: the checks in the chapter's order, then the load phase; the evidence report and the
// screen (NOTE [Machine gate]).
#include "spore/gate.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <ctime>

#include "gate/checks.h"
#include "spore/probe/env.h"
#include "spore/probe/report.h"

namespace spore::gate {

namespace {

using nlohmann::json;

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

CheckResult not_run(const char* name, const std::string& why) {
  CheckResult c;
  c.name = name;
  c.description = "";
  c.verdict = "not-run";
  c.reason = why;
  c.evidence = json::object();
  return c;
}

// JSON has no NaN: a figure with no sample is null.
json num(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }


}  // namespace

bool GateResult::passed() const {
  if (checks.empty()) return false;
  for (const auto& c : checks)
    if (c.verdict != "observed-pass") return false;
  return true;
}

GateResult run_gate(const GateOptions& o) {
  GateResult r;
  r.url = o.url;
  r.started_at = utc_now();
  const auto t0 = std::chrono::steady_clock::now();
  Target t{o.url, o.api_key, o.model, o.max_tokens, o.timeout_s};
  r.checks.push_back(check_health(t, o.wait_s));
  const char* later[] = {"models", "chat_json", "chat_sse", "completion_json", "protocol_malformed_json",
                         "protocol_unknown_model", "protocol_unknown_route", "load"};
  if (r.checks[0].verdict != "observed-pass") {
    // Nothing else can be observed of a server that is not up.
    for (const char* n : later) r.checks.push_back(not_run(n, "health failed: " + r.checks[0].reason));
  } else {
    r.checks.push_back(check_models_route(t));
    if (t.model.empty()) {
      for (size_t i = 1; i < std::size(later); ++i)
        r.checks.push_back(not_run(later[i], "no model to ask for: /v1/models listed none and --model was not given"));
    } else {
      r.checks.push_back(check_chat_json(t));
      r.checks.push_back(check_chat_sse(t));
      r.checks.push_back(check_completion_json(t));
      r.checks.push_back(check_malformed_json(t));
      r.checks.push_back(check_unknown_model(t));
      r.checks.push_back(check_unknown_route(t));
      r.checks.push_back(check_load(t, o.requests, o.concurrency, r.load));
    }
  }
  r.model = t.model;
  r.finished_at = utc_now();
  r.duration_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

namespace {

// Everything of the report but the environment and the command.
json result_json(const GateResult& r) {
  json checks = json::array();
  json counts = {{"observed-pass", 0}, {"observed-fail", 0}, {"blocked", 0}, {"not-run", 0}};
  for (const auto& c : r.checks) {
    checks.push_back({{"name", c.name}, {"description", c.description}, {"verdict", c.verdict}, {"reason", c.reason},
                      {"duration_ms", c.duration_ms}, {"evidence", c.evidence}});
    counts[c.verdict] = counts[c.verdict].get<int>() + 1;
  }
  const LoadFigures& f = r.load;
  const bool pass = r.passed();
  std::string reason = pass ? "every check observed-pass" : "";
  for (const auto& c : r.checks)
    if (!pass && c.verdict != "observed-pass") {
      reason = c.name + ": " + c.reason;
      break;
    }
  return {
      {"schema", "spore.gate-report/1"},
      {"kind", "gate"},
      {"url", r.url},
      {"model", r.model},
      {"verdict", pass ? "observed-pass" : "observed-fail"},
      {"reason", reason},
      {"started_at", r.started_at},
      {"finished_at", r.finished_at},
      {"duration_ms", r.duration_ms},
      {"counts", counts},
      {"checks", checks},
      {"load",
       {{"requests", f.requests},
        {"concurrency", f.concurrency},
        {"max_tokens", f.max_tokens},
        {"failed", f.failed},
        {"completion_tokens", f.completion_tokens},
        {"wall_s", f.wall_s},
        {"ttft_p50_ms", num(f.ttft_p50_ms)},
        {"ttft_p95_ms", num(f.ttft_p95_ms)},
        {"total_p50_ms", num(f.total_p50_ms)},
        {"total_p95_ms", num(f.total_p95_ms)},
        {"stream_tokens_per_s_p50", num(f.stream_tokens_per_s_p50)},
        {"decode_tokens_per_s_p50", num(f.decode_tokens_per_s_p50)},
        {"aggregate_tokens_per_s", num(f.aggregate_tokens_per_s)}}},
      {"reference",
       {{"source", "chapter 5.11, machine gate of Qwen1.5-0.5B-Chat"},
        {"machine", "Ascend 310B1 (20T), CANN 8.0.0, MindSpore 2.4.10 + MindNLP 0.4.1"},
        {"note", "a different machine and model: a reference point, not a target"},
        {"ttft_p50_ms", ChapterFigures::kTtftP50Ms},
        {"total_p50_ms", ChapterFigures::kTotalP50Ms},
        {"tokens_per_s", ChapterFigures::kTokensPerS}}},
  };
}

}  // namespace

json gate_report(const GateResult& r, const GateOptions& o) {
  json j = result_json(r);
  char cwd[4096];
  j["environment"] = json::parse(probe::env_summary(probe::collect_env(o.argv)).dump());
  j["command"] = {{"argv", o.argv}, {"cwd", getcwd(cwd, sizeof cwd) ? cwd : ""}};
  return j;
}

std::string format_gate(const GateResult& r) {
  // The same table `spore report show` prints for the file (src/probe/gate_report.cc).
  return probe::format_gate_report(probe::Json::parse(result_json(r).dump()));
}

}  // namespace spore::gate
