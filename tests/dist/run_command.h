// Runs a shell command line for the tests that drive mpirun or `spore launch`: its exit status
// (128 + signal when killed), stdout and stderr together, and how long it took.
#pragma once
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace spore::dist::test {

struct CommandResult {
  int status = 0;
  std::string out;
  double seconds = 0;
};

inline CommandResult run_command(const std::string& cmd) {
  CommandResult r;
  const auto start = std::chrono::steady_clock::now();
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return {127, "popen failed: " + cmd, 0};
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace spore::dist::test
