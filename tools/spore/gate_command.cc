// spore gate: the chapter's machine gate against a running OpenAI-compatible server
// (include/spore/gate.h, NOTE [Machine gate]).
//   spore gate --url URL [--requests N] [--concurrency C] [--out DIR] [--model NAME] [--api-key K]
// Prints a verdict per check and the load figures beside the chapter's; writes
// DIR/gate-report.json with --out. Exit status 0 only when every check is observed-pass.
#include <cstdio>
#include <filesystem>
#include <memory>

#include "commands.h"
#include "spore/gate.h"
#include "spore/probe/report.h"

namespace spore::cli {

namespace {

int run_gate_command(const gate::GateOptions& o) {
  std::fprintf(stderr, "spore gate: checking %s (%d requests at concurrency %d for the load figures)\n", o.url.c_str(),
               o.requests, o.concurrency);
  const gate::GateResult r = gate::run_gate(o);
  std::fputs(gate::format_gate(r).c_str(), stdout);
  if (!o.out_dir.empty()) {
    std::filesystem::create_directories(o.out_dir);
    const std::string path = (std::filesystem::path(o.out_dir) / "gate-report.json").string();
    probe::write_json(path, probe::Json::parse(gate::gate_report(r, o).dump()));
    std::printf("report: %s\n", path.c_str());
  }
  return r.passed() ? 0 : 1;
}

}  // namespace

void add_gate_command(CLI::App& app, Handlers& h, const std::vector<std::string>& command) {
  auto* cmd = add_command(app, "gate",
                          "Check an OpenAI-compatible server (health, models, JSON, SSE, protocol errors) and measure "
                          "first-token latency, total latency and tokens/s",
                          "spore gate --url http://127.0.0.1:8080 --requests 32 --concurrency 4 --out outputs/gate");
  auto o = std::make_shared<gate::GateOptions>();
  o->argv = command;
  cmd->add_option("--url", o->url, "The server's base URL (the API under /v1)")->capture_default_str();
  cmd->add_option("--requests", o->requests, "Streamed requests in the load phase")->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--concurrency", o->concurrency, "Load-phase requests in flight at once")->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--out", o->out_dir, "Write the evidence report to DIR/gate-report.json");
  cmd->add_option("--model", o->model, "Model name to ask for (default: the first /v1/models lists)");
  cmd->add_option("--api-key", o->api_key, "Send 'Authorization: Bearer KEY'");
  cmd->add_option("--max-tokens", o->max_tokens, "Tokens per request")->check(CLI::Range(1, 4096))->capture_default_str();
  cmd->add_option("--timeout", o->timeout_s, "Seconds one request may take")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--wait", o->wait_s, "Seconds /health may answer 503 while the model loads")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->callback([&h, o] { h.action = [o] { return run_gate_command(*o); }; });
}

}  // namespace spore::cli
