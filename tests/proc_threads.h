// What a process's threads are doing, read from /proc (NOTE [Threads that sleep]): each thread's
// scheduler state and CPU time. A thread spinning in a wait loop is always runnable ('R', whether
// on a core or queued behind a busy machine's other work); one asleep on a futex is 'S' and gains
// no CPU time. So "every thread reaches 'S' and stays without CPU" separates sleeping from
// spinning with no timing threshold: the load of the machine only delays the moment it happens.
#pragma once
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

namespace spore::test {

struct ThreadState {
  int tid = 0;
  char state = '?';     // R running or runnable, S sleeping, D, T, ...
  std::string name;     // comm
  uint64_t cpu_ns = 0;  // time on a CPU so far (schedstat; else utime + stime)
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

inline std::vector<ThreadState> threads_of(pid_t pid) {
  std::vector<ThreadState> out;
  const std::filesystem::path dir = "/proc/" + std::to_string(pid) + "/task";
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    ThreadState t;
    t.tid = std::stoi(e.path().filename().string());
    const std::string stat = slurp(e.path() / "stat");
    const size_t open = stat.find('('), close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close + 2 >= stat.size()) continue;  // gone
    t.name = stat.substr(open + 1, close - open - 1);
    t.state = stat[close + 2];
    const std::string sched = slurp(e.path() / "schedstat");
    if (!sched.empty()) {
      t.cpu_ns = std::stoull(sched);
    } else {  // fields 14 and 15 (utime, stime) in clock ticks, counted after the ')'
      std::vector<std::string> f;
      std::string cur;
      for (size_t i = close + 2; i < stat.size(); ++i) {
        if (stat[i] == ' ') {
          f.push_back(cur);
          cur.clear();
        } else {
          cur += stat[i];
        }
      }
      if (f.size() > 12) t.cpu_ns = (std::stoull(f[11]) + std::stoull(f[12])) * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
    }
    out.push_back(t);
  }
  return out;
}

// Waits (up to `timeout`) until every thread of `pid` but `except` is asleep at one sample; then
// checks that together they gain less than a tenth of `quiet` of CPU over `quiet`. Returns ""
// when so, else what was seen (the threads still running).
inline std::string wait_until_all_sleep(pid_t pid, int except, std::chrono::milliseconds timeout,
                                        std::chrono::milliseconds quiet = std::chrono::milliseconds(300)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string seen;
  for (;;) {
    std::vector<ThreadState> ts = threads_of(pid);
    seen.clear();
    for (const ThreadState& t : ts)
      if (t.tid != except && t.state != 'S')
        seen += " " + t.name + "[" + std::to_string(t.tid) + "]=" + std::string(1, t.state);
    if (seen.empty()) {
      uint64_t before = 0, after = 0;
      for (const ThreadState& t : ts)
        if (t.tid != except) before += t.cpu_ns;
      std::this_thread::sleep_for(quiet);
      for (const ThreadState& t : threads_of(pid))
        if (t.tid != except) after += t.cpu_ns;
      const uint64_t used = after > before ? after - before : 0;
      if (used * 10 < (uint64_t)std::chrono::nanoseconds(quiet).count()) return "";
      seen = " asleep at one sample but used " + std::to_string(used / 1000000) + " ms of CPU over the next " +
             std::to_string(quiet.count()) + " ms";
    }
    if (std::chrono::steady_clock::now() > deadline) return "still running after " + std::to_string(timeout.count()) + " ms:" + seen;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// Waits up to `timeout` for child `pid` to exit and returns its wait status; past the timeout the
// child is killed (SIGKILL) and *hung is set.
inline int wait_for_exit(pid_t pid, std::chrono::milliseconds timeout, bool* hung = nullptr) {
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  if (hung) *hung = false;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      if (hung) *hung = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return status;
}

}  // namespace spore::test
