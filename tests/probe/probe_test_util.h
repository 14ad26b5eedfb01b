// Shared by the probe tests: the test binary acts as its own probe child (through a gtest
// filter, since gtest owns main), and report helpers.
#pragma once
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "spore/probe.h"

namespace spore::probe::test {

inline RunOptions child_options(double timeout_s = 20) {
  RunOptions o;
  o.child_command = {"/proc/self/exe", "--gtest_filter=ProbeChildEntry.Run"};
  o.timeout_s = timeout_s;
  o.quiet = true;
  o.write_reports = false;
  return o;
}

inline std::string schema_dir() { return std::string(SPORE_SOURCE_DIR) + "/schemas"; }

inline void expect_valid(const Json& report) {
  std::string path = schema_path_for(report, schema_dir());
  auto errors = validate_schema(report, read_json(path));
  for (const auto& e : errors) ADD_FAILURE() << path << ": " << e;
}

// A fresh directory under the build tree for one test's reports.
inline std::string temp_dir(const std::string& name) {
  std::string d = std::string(SPORE_BINARY_DIR) + "/test-outputs/" + name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

// A program run through the shell, stdout and stderr together.
struct ProgramRun {
  int status = -1;  // exit status, or -1 when it did not exit normally
  std::string output;
};
inline ProgramRun run_program(const std::string& command) {
  ProgramRun r;
  std::FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// The spore program next to the tests.
inline std::string spore_cli_path() { return std::string(SPORE_BINARY_DIR) + "/bin/spore"; }

}  // namespace spore::probe::test
