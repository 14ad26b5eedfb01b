// Helpers of the tests that run a real `spore serve` (tests/serve, tests/gate): the model they
// need, a free loopback port, and the server started and stopped as a child process.
#pragma once
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

namespace spore::test {

inline std::filesystem::path model_path() {
  return std::filesystem::path(SPORE_SOURCE_DIR) / "models/smollm2-135m-instruct";
}
// Whether the model's .gguf is there (scripts/fetch-model.sh fetches it).
inline bool have_model() {
  std::error_code ec;
  if (!std::filesystem::is_directory(model_path(), ec)) return false;
  for (const auto& e : std::filesystem::directory_iterator(model_path(), ec))
    if (e.path().extension() == ".gguf") return true;
  return false;
}

inline int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, (sockaddr*)&a, sizeof a);
  socklen_t n = sizeof a;
  getsockname(fd, (sockaddr*)&a, &n);
  close(fd);
  return ntohs(a.sin_port);
}

// The built `spore` run as `spore serve <args>` in a child process; its pid.
inline pid_t start_serve(const std::vector<std::string>& args) {
  const std::string bin = std::string(SPORE_BINARY_DIR) + "/bin/spore";
  std::vector<std::string> all = {bin, "serve"};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

// Stops a server start_serve started (SIGTERM) and waits for it; its wait status.
inline int stop_serve(pid_t pid) {
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

}  // namespace spore::test
