// spore gate: the chapter's "machine gate" (section 5.11) as a tool (NOTE [Machine gate]).
// It speaks to any OpenAI-compatible server at a URL: health, models, a JSON chat completion,
// an SSE chat completion, a JSON text completion and a protocol regression (malformed JSON,
// unknown model, unknown route), every answer held to OpenAI's response shapes; then N streamed
// requests at concurrency C for time to first token, total latency and tokens/s. Each check gets
// a verdict in the harness's vocabulary (observed-pass, observed-fail, not-run) and the whole
// run an evidence report (schemas/gate-report.schema.json, kind "gate").
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace spore::gate {

struct GateOptions {
  std::string url = "http://127.0.0.1:8080";  // the server's base URL (the API under /v1)
  int requests = 16;                          // requests in the load phase
  int concurrency = 4;                        // of them in flight at once
  std::string out_dir;                        // where gate-report.json goes; empty: nowhere
  std::string model;                          // empty: the first model /v1/models lists
  std::string api_key;                        // sent as a Bearer token when not empty
  int max_tokens = 32;                        // per request
  double timeout_s = 120;                     // per request
  double wait_s = 60;                         // how long /health may answer 503 (model loading)
  std::vector<std::string> argv;              // the command line, for the report
};

struct CheckResult {
  std::string name;         // health, models, chat_json, ...
  std::string description;  // one line: what was asked of the server
  std::string verdict;      // observed-pass, observed-fail or not-run
  std::string reason;       // why, in words (the first problems found, or what was observed)
  nlohmann::json evidence;  // what the answer held: status, content type, the problems, figures
  double duration_ms = 0;
};

struct LoadFigures {
  int requests = 0, concurrency = 0, failed = 0, max_tokens = 0;
  double ttft_p50_ms = 0, ttft_p95_ms = 0, total_p50_ms = 0, total_p95_ms = 0;
  double stream_tokens_per_s_p50 = 0;  // one stream's completion tokens / its total latency
  double decode_tokens_per_s_p50 = 0;  // one stream's tokens after the first / time after the first
  double aggregate_tokens_per_s = 0;   // all completion tokens / the load phase's wall time
  long long completion_tokens = 0;
  double wall_s = 0;
  std::vector<std::string> failures;   // the first few, in words
};

struct GateResult {
  std::string url, model;
  std::vector<CheckResult> checks;
  LoadFigures load;
  std::string started_at, finished_at;
  double duration_ms = 0;
  bool passed() const;  // every check observed-pass
};

// Runs every check in order. A server that cannot be reached fails health and leaves the rest
// not-run; nothing here throws for what the server does.
GateResult run_gate(const GateOptions& o);

// The evidence report (schema spore.gate-report/1), with the chapter's figures beside ours.
nlohmann::json gate_report(const GateResult& r, const GateOptions& o);
// The screen: one line per check, then the figures next to the chapter's.
std::string format_gate(const GateResult& r);

// The chapter's machine-gate figures (section 5.11: Qwen1.5-0.5B-Chat on an Ascend 310B1 board,
// MindSpore 2.4.10 + MindNLP 0.4.1), printed beside every run as a reference point only.
struct ChapterFigures {
  static constexpr double kTtftP50Ms = 655.5;
  static constexpr double kTotalP50Ms = 1295.4;
  static constexpr double kTokensPerS = 1.544;
};

}  // namespace spore::gate
