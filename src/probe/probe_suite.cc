// A run of several probes: the env snapshot, one report per probe and the run summary.
#include <filesystem>

#include "spore/error.h"
#include "spore/probe/env.h"
#include "spore/probe/report.h"
#include "spore/probe/runner.h"

namespace spore::probe {

namespace {
std::string file_safe(std::string s) {
  for (char& c : s)
    if (!(std::isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.')) c = '_';
  return s;
}
}  // namespace

RunSummary run_probes(const std::vector<std::string>& names, const RunOptions& opts_in,
                      const std::vector<std::string>& command) {
  for (const auto& n : names)
    if (!find_probe(n)) throw Error(ErrorCode::kValue, "unknown probe '" + n + "'; `spore probe list` shows them");
  RunOptions opts = opts_in;
  canonical_device_text(opts.device);  // a bad device is a usage error before anything runs

  RunSummary s;
  const std::string stamp = utc_stamp_for_file();
  const std::string started = utc_now_iso8601();
  namespace fs = std::filesystem;
  std::string dir = opts.out_dir.empty() ? std::string("outputs") : opts.out_dir;
  if (opts.write_reports) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw Error(ErrorCode::kIO, "cannot create report directory '" + dir + "': " + ec.message());
    dir = fs::absolute(dir).lexically_normal().string();
    // Children inherit it: probes put their artifacts next to the reports (artifact_dir()).
    setenv("SPORE_PROBE_OUT_DIR", dir.c_str(), 1);
  }
  // The parent's snapshot, taken before any child starts; it opens no device (NOTE [Probe isolation]).
  Json env = collect_env(command);
  s.env_report_path = dir + "/board-env-" + stamp + ".json";
  s.run_report_path = dir + "/board-run-" + stamp + ".json";
  env["paths"]["report"] = s.env_report_path;
  if (opts.write_reports) write_json(s.env_report_path, env);
  opts.environment = env_summary(env);
  opts.env_report_path = s.env_report_path;
  opts.run_report_path = s.run_report_path;

  Json results = Json::array();
  Json artifacts = Json::array();
  std::vector<std::string> paths;
  for (const auto& name : names) {
    Json rep = run_probe_isolated(name, opts);
    std::string path = dir + "/probe-" + file_safe(name) + "-" + stamp + ".json";
    rep["paths"]["report"] = path;
    if (opts.write_reports) write_json(path, rep);
    std::string v = rep["verdict"].get<std::string>();
    if (v == "observed-pass") ++s.passed;
    else if (v == "observed-fail") ++s.failed;
    else if (v == "blocked") ++s.blocked;
    else ++s.not_run;
    Json row;
    row["probe"] = name;
    row["group"] = rep["group"];
    row["device"] = rep["device_requested"];
    row["verdict"] = rep["verdict"];
    row["reason"] = rep["reason"];
    row["exit_code"] = rep["results"]["process"]["exit_code"];
    row["duration_ms"] = rep["duration_ms"];
    row["values"] = rep["results"]["values"];
    Json diffs = Json::object();
    for (const Json& c : rep["results"]["comparisons"]) diffs[c["what"].get<std::string>()] = c["max_abs_diff"];
    row["max_abs_diff"] = diffs;
    row["report"] = path;
    results.push_back(row);
    for (const Json& a : rep["artifacts"]) artifacts.push_back(a);
    paths.push_back(path);
    s.probe_reports.push_back(std::move(rep));
  }

  Json run;
  run["schema"] = "spore.run-report/1";
  run["kind"] = "run";
  run["started_at"] = started;
  run["finished_at"] = utc_now_iso8601();
  run["device"] = opts.device;
  run["timeout_s"] = opts.timeout_s;
  run["environment"] = opts.environment;
  run["artifacts"] = artifacts;
  run["command"] = command_record(command);
  run["results"] = results;
  run["counts"] = Json{{"observed-pass", s.passed}, {"observed-fail", s.failed},
                       {"blocked", s.blocked}, {"not-run", s.not_run}};
  run["paths"] = Json{{"report", s.run_report_path}, {"env_report", s.env_report_path}, {"probe_reports", paths}};
  if (opts.write_reports) write_json(s.run_report_path, run);
  s.run_report = std::move(run);
  return s;
}

}  // namespace spore::probe
