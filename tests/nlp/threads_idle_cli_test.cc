// NOTE [Threads that sleep] and NOTE [Passive OpenMP in the CLI] for a plain command: `spore chat`
// on the embedded model answers one message and then waits for the next line; while it waits,
// every one of its threads must be asleep and stay without CPU (proc_threads.h: no timing
// threshold, the machine's load only delays it). With the user's environment naming no policy the
// process runs with OMP_WAIT_POLICY=passive (it re-executed itself); with OMP_WAIT_POLICY=active
// named, libgomp's workers would spin, but the kernels' loops do not run on them.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "nlp/embedded_model.h"
#include "nlp/spore_cli_run.h"
#include "proc_threads.h"

extern char** environ;

namespace {

using spore::test::have_model;
using spore::test::kModel;

// Starts `spore chat`, sends one message, waits for its figures line, checks the idle threads
// (and, with `policy` empty, that the process runs passive), then ends the chat.
void idle_chat_sleeps(const std::string& policy) {
  const std::string err_path =
      (std::filesystem::temp_directory_path() / ("threads_idle." + std::to_string(getpid()) + policy + ".err")).string();
  int in[2];
  ASSERT_EQ(pipe(in), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_addclose(&fa, in[1]);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "OMP_WAIT_POLICY=", 16) != 0 && std::strncmp(*e, "GOMP_SPINCOUNT=", 15) != 0) env.emplace_back(*e);
  if (!policy.empty()) env.push_back("OMP_WAIT_POLICY=" + policy);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = {spore::test::spore_binary(), "chat", "--max-tokens", "4", "--temperature", "0",
                                   "--threads", "2"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), envp.data()), 0);
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]);
  const char msg[] = "Say hello.\n";
  ASSERT_EQ(write(in[1], msg, sizeof msg - 1), (ssize_t)(sizeof msg - 1));
  // The answer's figures line: "[N tokens, ...]".
  std::string err;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(180);
  while (err.find(" cached]") == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    err = spore::test::slurp(err_path);
  }
  std::string seen = "no answer: " + err;
  if (err.find(" cached]") != std::string::npos) {
    if (policy.empty()) {
      EXPECT_NE(spore::test::slurp("/proc/" + std::to_string(pid) + "/environ").find(std::string("OMP_WAIT_POLICY=passive") + '\0'),
                std::string::npos)
          << "the CLI did not re-execute itself with a passive OpenMP policy";
    }
    seen = spore::test::wait_until_all_sleep(pid, -1, std::chrono::seconds(30));
  }
  close(in[1]);  // end of input: the chat ends
  const int status = spore::test::wait_for_exit(pid, std::chrono::seconds(60));
  err = spore::test::slurp(err_path);
  std::filesystem::remove(err_path);
  EXPECT_EQ(seen, "") << "threads of the waiting chat did not sleep";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << err;
}

TEST(ThreadsIdleCli, AWaitingChatSleepsWithTheDefaultPolicy) {
  if (!have_model()) GTEST_SKIP() << kModel << " is not there (bash scripts/fetch-model.sh)";
  idle_chat_sleeps("");
}

TEST(ThreadsIdleCli, AWaitingChatSleepsEvenWithOmpWaitPolicyActive) {
  if (!have_model()) GTEST_SKIP() << kModel << " is not there (bash scripts/fetch-model.sh)";
  idle_chat_sleeps("active");
}

}  // namespace
