// Runs the built `spore` binary as a person or a script would, for the CLI tests of tests/nlp/.
#pragma once
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace spore::test {

inline const std::string& spore_binary() {
  static const std::string path = std::string(SPORE_BINARY_DIR) + "/bin/spore";
  return path;
}

struct CliRun {
  int status = 0;
  std::string out, err;
};

// Runs `spore <args>` through the shell with `input` on stdin; captures stdout and stderr.
// `tag` keeps the temporary files of tests that ctest runs at once apart (with the pid).
inline CliRun run_spore(const std::string& args, const std::string& input, const std::string& tag) {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string stem = tag + "." + std::to_string(::getpid());
  const std::string in = (dir / (stem + ".in")).string(), err = (dir / (stem + ".err")).string();
  std::ofstream(in) << input;
  FILE* p = popen((spore_binary() + " " + args + " <" + in + " 2>" + err).c_str(), "r");
  CliRun r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  r.status = WEXITSTATUS(pclose(p));
  std::ifstream e(err);
  r.err.assign(std::istreambuf_iterator<char>(e), {});
  std::filesystem::remove(in);
  std::filesystem::remove(err);
  return r;
}

}  // namespace spore::test
