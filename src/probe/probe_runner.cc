// The parent side of NOTE [Probe isolation]: fork/exec, pipes, timeout, classification.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "spore/error.h"
#include "spore/probe/env.h"
#include "spore/probe/report.h"
#include "spore/probe/runner.h"

extern char** environ;

namespace spore::probe {

namespace {
using Clock = std::chrono::steady_clock;

// Moves an fd above the standard ones (and above the result fd), close-on-exec.
int high_fd(int fd) {
  int h = fcntl(fd, F_DUPFD_CLOEXEC, 10);
  close(fd);
  return h;
}

void append_tail(std::string& s, const char* data, size_t n, size_t keep) {
  s.append(data, n);
  if (s.size() > 2 * keep + 4096) s.erase(0, s.size() - keep);
}

// Reads what is available; returns false at EOF or on a hard error.
bool drain(int fd, std::string& into, size_t keep, bool tail) {
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      if (tail) append_tail(into, buf, (size_t)n, keep);
      else if (into.size() < keep) into.append(buf, std::min((size_t)n, keep - into.size()));
      continue;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
}

std::string signal_label(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return std::string("SIG") + (abbrev ? abbrev : std::to_string(sig).c_str());
}
}  // namespace

ChildRun run_child(const std::vector<std::string>& argv, double timeout_s, size_t tail_bytes,
                   const std::vector<std::string>& extra_env) {
  if (argv.empty()) throw Error(ErrorCode::kValue, "run_child: empty command");
  ChildRun run;
  run.argv = argv;

  // Everything the child needs is built before fork: after it only async-signal-safe calls.
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  std::vector<std::string> env_store;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    bool overridden = false;
    for (const auto& x : extra_env)
      if (kv.compare(0, x.find('=') + 1, x, 0, x.find('=') + 1) == 0) overridden = true;
    if (!overridden) env_store.push_back(kv);
  }
  for (const auto& x : extra_env) env_store.push_back(x);
  std::vector<char*> cenv;
  for (auto& kv : env_store) cenv.push_back(kv.data());
  cenv.push_back(nullptr);

  int res[2], out[2], err[2];
  if (pipe(res) || pipe(out) || pipe(err))
    throw Error(ErrorCode::kIO, std::string("run_child: pipe failed: ") + std::strerror(errno));
  for (int* p : {res, out, err}) {
    p[0] = high_fd(p[0]);
    p[1] = high_fd(p[1]);
  }
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);

  auto start = Clock::now();
  pid_t pid = fork();
  if (pid < 0) throw Error(ErrorCode::kIO, std::string("run_child: fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);  // its own group, so the parent can kill everything it starts
    signal(SIGPIPE, SIG_DFL);
    if (devnull >= 0) dup2(devnull, 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    dup2(res[1], kResultFd);
    execve(cargv[0], cargv.data(), cenv.data());
    const char msg[] = "probe child: exec failed\n";
    ssize_t ignored = write(2, msg, sizeof msg - 1);
    (void)ignored;
    _exit(127);
  }
  setpgid(pid, pid);  // also here: no window in which a kill of the group misses the child
  run.pid = pid;
  if (devnull >= 0) close(devnull);
  close(res[1]);
  close(out[1]);
  close(err[1]);
  for (int fd : {res[0], out[0], err[0]}) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);

  const size_t kMaxResult = 16u << 20;
  bool open_fd[3] = {true, true, true};
  int fds[3] = {res[0], out[0], err[0]};
  std::string* sinks[3] = {&run.result_text, &run.stdout_tail, &run.stderr_tail};
  auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  int status = 0;
  bool exited = false;
  while (!exited) {
    pollfd pfd[3];
    int n = 0;
    int map[3];
    for (int i = 0; i < 3; ++i)
      if (open_fd[i]) {
        pfd[n] = {fds[i], POLLIN, 0};
        map[n++] = i;
      }
    auto now = Clock::now();
    if (now >= deadline) {
      run.timed_out = true;
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    int wait_ms = (int)std::min<long long>(
        50, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1);
    int rc = poll(pfd, (nfds_t)n, wait_ms);
    if (rc > 0) {
      for (int k = 0; k < n; ++k)
        if (pfd[k].revents) {
          int i = map[k];
          open_fd[i] = drain(fds[i], *sinks[i], i == 0 ? kMaxResult : tail_bytes, i != 0);
        }
    }
    // Has it exited? Look without reaping, so the group id stays ours until we kill strays.
    siginfo_t info{};
    if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) {
      exited = true;
      for (int i = 0; i < 3; ++i)
        if (open_fd[i]) drain(fds[i], *sinks[i], i == 0 ? kMaxResult : tail_bytes, i != 0);
      kill(-pid, SIGKILL);  // anything it left behind in its group
      waitpid(pid, &status, 0);
    }
  }
  for (int i = 0; i < 3; ++i) {
    if (open_fd[i]) drain(fds[i], *sinks[i], i == 0 ? kMaxResult : tail_bytes, i != 0);
    close(fds[i]);
  }
  run.duration_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  if (WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) run.exit_code = -WTERMSIG(status);
  if (run.timed_out) run.exit_code = -SIGKILL;
  for (std::string* s : {&run.stdout_tail, &run.stderr_tail})
    if (s->size() > tail_bytes) s->erase(0, s->size() - tail_bytes);
  return run;
}

Json classify_child(const ChildRun& run, const std::string& probe, const std::string& device,
                    double timeout_s) {
  Json c;
  Json proc;
  proc["pid"] = run.pid;
  proc["exit_code"] = run.exit_code;
  proc["signal"] = run.exit_code < 0 ? Json(signal_label(-run.exit_code)) : Json(nullptr);
  proc["timed_out"] = run.timed_out;
  proc["timeout_s"] = timeout_s;
  proc["duration_ms"] = run.duration_ms;
  proc["stdout_tail"] = run.stdout_tail;
  proc["stderr_tail"] = run.stderr_tail;
  c["process"] = proc;

  Verdict v = Verdict::kObservedFail;
  std::string reason;
  Json result = nullptr;
  std::string how = run.exit_code < 0
                        ? "killed by signal " + signal_label(-run.exit_code) + " (" + std::to_string(run.exit_code) + ")"
                        : "exited with code " + std::to_string(run.exit_code);
  if (run.timed_out) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", timeout_s);
    reason = std::string("timed out after ") + buf + " s; its process group was killed (SIGKILL)";
  } else if (run.result_text.empty()) {
    reason = how + " without a result";
  } else {
    try {
      // The child's result is outside input too: bounded depth (NOTE [Hostile JSON]).
      result = parse_json(run.result_text, "the child's result");
    } catch (const Error&) {
      result = nullptr;
      std::string head = run.result_text.substr(0, 80);
      for (char& ch : head)
        if ((unsigned char)ch < 32) ch = ' ';
      reason = "malformed result (not JSON): \"" + head + "\"; " + how;
    }
    if (!result.is_null()) {
      if (!result.is_object() || !result.contains("probe") || result["probe"] != probe) {
        reason = "malformed result: not a result object for probe '" + probe + "'";
        result = Json{{"raw", run.result_text.substr(0, 4096)}};
      } else {
        // The child's own verdict is advisory: the rule is applied again here.
        result["device_requested"] = device;
        v = judge(result, &reason);
        if (run.exit_code != 0 && v != Verdict::kObservedFail) {
          reason = "the process " + how + " after reporting (" + verdict_name(v) + ": " + reason + ")";
          v = Verdict::kObservedFail;
        }
      }
    }
  }
  c["verdict"] = verdict_name(v);
  c["reason"] = reason;
  c["result"] = result;
  return c;
}

std::vector<std::string> default_child_command() { return {"/proc/self/exe", kChildCommand}; }

Json run_probe_isolated(const std::string& name, const RunOptions& opts) {
  const ProbeSpec* spec = find_probe(name);
  if (!spec) throw Error(ErrorCode::kValue, "unknown probe '" + name + "'; `spore probe list` shows them");
  std::vector<std::string> argv = opts.child_command.empty() ? default_child_command() : opts.child_command;
  argv.insert(argv.end(), {name, "--device", opts.device, "--result-fd", std::to_string(kResultFd)});
  std::vector<std::string> env = {"SPORE_PROBE_CHILD_NAME=" + name, "SPORE_PROBE_CHILD_DEVICE=" + opts.device};
  const std::string want = probe_device(*spec, opts.device);

  Json report;
  report["schema"] = "spore.probe-report/1";
  report["kind"] = "probe";
  report["probe"] = name;
  report["group"] = spec->group;
  report["description"] = spec->description;
  report["device_requested"] = want;
  report["started_at"] = utc_now_iso8601();
  if (!opts.quiet) std::fprintf(stderr, "[probe] %-28s ...", name.c_str());
  ChildRun run = run_child(argv, opts.timeout_s, opts.tail_bytes, env);
  report["finished_at"] = utc_now_iso8601();
  Json c = classify_child(run, name, want, opts.timeout_s);
  if (!opts.quiet) std::fprintf(stderr, " %s (%.0f ms)\n", c["verdict"].get<std::string>().c_str(), run.duration_ms);

  const Json& r = c["result"];
  bool has = r.is_object() && r.contains("comparisons");
  // The device that actually ran: named by the results themselves, never assumed.
  Json ran = Json::array();
  if (has)
    for (const Json& cmp : r["comparisons"])
      if (cmp.contains("device") && std::find(ran.begin(), ran.end(), cmp["device"]) == ran.end())
        ran.push_back(cmp["device"]);
  report["device_ran"] = ran;
  report["verdict"] = c["verdict"];
  report["reason"] = c["reason"];
  report["duration_ms"] = run.duration_ms;
  report["environment"] = opts.environment.is_null() ? env_summary(collect_env({})) : opts.environment;
  report["artifacts"] = has && r["artifacts"].is_array() ? r["artifacts"] : Json::array();
  report["command"] = command_record(argv);
  Json results;
  results["process"] = c["process"];
  results["values"] = has && r.contains("values") ? r["values"] : Json::object();
  results["comparisons"] = has ? r["comparisons"] : Json::array();
  results["shapes"] = has && r.contains("shapes") ? r["shapes"] : Json::array();
  results["child_status"] = r.is_object() && r.contains("status") ? r["status"] : Json(nullptr);
  results["child_reason"] = r.is_object() && r.contains("reason") ? r["reason"] : Json(nullptr);
  if (!has && r.is_object() && r.contains("raw")) results["raw_result"] = r["raw"];
  report["results"] = results;
  report["paths"] = Json{{"report", nullptr},
                         {"run_report", opts.run_report_path.empty() ? Json(nullptr) : Json(opts.run_report_path)},
                         {"env_report", opts.env_report_path.empty() ? Json(nullptr) : Json(opts.env_report_path)}};
  return report;
}

}  // namespace spore::probe
