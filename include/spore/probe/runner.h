// Running probes in child processes (NOTE [Probe isolation]).
//
// NOTE [Probe isolation]
// Every probe runs in a fresh child: the same binary re-executed with a hidden subcommand, in its
// own process group, so a crash or a hang is a recorded result instead of a lost session (the
// chapter's TBE crashes and hung device probes). The parent never touches a device: it starts
// each child before it has any device context of its own (the chapter saw children hang when
// the parent already held the device). The child writes its result as JSON to a pipe (fd 3);
// stdout and stderr go to two more pipes whose tails are kept. The parent enforces the timeout
// by killing the whole group, and records the exit code or the signal as a negative number
// (SIGSEGV = -11). A child that exits without a result, or with something that is not JSON, is
// an observed failure, and the run goes on with the next probe.
#pragma once
#include <string>
#include <vector>

#include "spore/probe/probe.h"

namespace spore::probe {

inline constexpr int kResultFd = 3;  // the child's end of the result pipe

struct RunOptions {
  std::string device = "cpu";  // as given on the command line
  double timeout_s = 120;
  // argv prefix that makes a binary act as a probe child; the runner appends
  // "<probe> --device <d> --result-fd 3". Default: {"/proc/self/exe", "__probe-child"}.
  std::vector<std::string> child_command;
  std::string out_dir = "outputs";  // where reports go
  bool write_reports = true;
  bool quiet = false;               // no progress lines on stderr
  size_t tail_bytes = 4096;         // kept of stdout and stderr
  Json environment;                 // env_summary() to put in reports; collected when null
  std::string env_report_path;      // recorded in probe reports when set
  std::string run_report_path;      // recorded in probe reports when set
};

// What the parent knows about one child run (before it becomes a report).
struct ChildRun {
  std::vector<std::string> argv;
  int pid = 0;
  int exit_code = 0;      // exit status, or -signal when killed by one
  bool timed_out = false;
  double duration_ms = 0;
  std::string result_text;  // raw bytes from the result pipe
  std::string stdout_tail, stderr_tail;
};

// Starts `argv` as a child in its own group with the result pipe on fd 3, waits at most
// timeout_s (then kills the group). Environment: the parent's plus `extra_env` (NAME=value).
ChildRun run_child(const std::vector<std::string>& argv, double timeout_s, size_t tail_bytes,
                   const std::vector<std::string>& extra_env = {});

// Turns a finished child into the result JSON (classification of crashes, timeouts, silence,
// garbage; NOTE [Evidence rule] applied again). `probe` and `device` name what was asked for.
Json classify_child(const ChildRun& run, const std::string& probe, const std::string& device,
                    double timeout_s);

// Runs one registered probe in a child and returns its probe report (not written).
Json run_probe_isolated(const std::string& name, const RunOptions& opts);

struct RunSummary {
  Json run_report;                 // board-run-<ts>.json contents
  std::vector<Json> probe_reports;
  std::string run_report_path, env_report_path;
  int failed = 0, passed = 0, blocked = 0, not_run = 0;
};
// Runs the named probes one after another, each isolated; writes board-env-<ts>.json, one
// report per probe and board-run-<ts>.json under opts.out_dir (unless write_reports is false).
// `command` is the argv of the invoking command, recorded in every report.
RunSummary run_probes(const std::vector<std::string>& names, const RunOptions& opts,
                      const std::vector<std::string>& command);

// The child side: runs probe `name` on `device` and writes the result JSON to `result_fd`.
// Returns the process exit code (0 whenever a result was written).
int child_main(const std::string& name, const std::string& device, int result_fd);
// Parses "NAME --device D --result-fd N" after the hidden subcommand; returns the exit code.
int child_main_from_args(int argc, char** argv);

// For binaries that cannot take the hidden subcommand (a test binary run with a gtest filter):
// the runner also passes the request as SPORE_PROBE_CHILD_NAME / _DEVICE in the environment.
// Returns -1 when this process is not a probe child, else the exit code of child_main.
int child_main_from_env();

// The device a probe runs on, spelled as Device::str() spells it ("cpu", "cuda:0"): its own
// backend when the probe names one (needs_backend), else `requested`. Pure string work, so the
// parent can use it without touching a device. Throws kValue when `requested` is not NAME[:N].
std::string probe_device(const ProbeSpec& spec, const std::string& requested);
std::string canonical_device_text(const std::string& text);

// The probe-child subcommand name (hidden from help).
inline constexpr const char* kChildCommand = "__probe-child";

}  // namespace spore::probe
