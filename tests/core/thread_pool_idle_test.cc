// NOTE [Threads that sleep]: the kernels' pool sleeps when idle whatever OpenMP's wait policy is,
// in any program that links the library. The test re-runs this binary as a child with
// OMP_WAIT_POLICY=active (libgomp's workers then spin until the process ends): after parallel
// loops on several threads, every thread of the child but the one watching must fall asleep and
// stay without CPU. With the loops on OpenMP, as before, the child's workers never did.
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/thread_pool.h"
#include "proc_threads.h"
#include "spore/context.h"

extern char** environ;

namespace {

using namespace spore;

constexpr const char* kChildFlag = "SPORE_TEST_POOL_IDLE_CHILD";

TEST(ThreadPoolIdle, WorkersSleepWhenIdleWhateverOmpWaitPolicySays) {
  if (std::getenv(kChildFlag) == nullptr) {
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e)
      if (std::strncmp(*e, "OMP_WAIT_POLICY=", 16) != 0) env.emplace_back(*e);
    env.emplace_back("OMP_WAIT_POLICY=active");
    env.emplace_back(std::string(kChildFlag) + "=1");
    std::vector<char*> envp;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string exe = "/proc/self/exe", filter = "--gtest_filter=ThreadPoolIdle.WorkersSleepWhenIdleWhateverOmpWaitPolicySays";
    char* argv[] = {exe.data(), filter.data(), nullptr};
    pid_t pid = 0;
    ASSERT_EQ(posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv, envp.data()), 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child (OMP_WAIT_POLICY=active) failed; its output is above";
    return;
  }
  // The child.
  ContextSettings s = context();
  s.num_threads = 3;
  ContextScope scope(s);
  std::atomic<int64_t> sum{0};
  for (int round = 0; round < 20; ++round)
    cpu::parallel_for(1 << 16, 1, [&](int64_t b, int64_t e) {
      int64_t local = 0;
      for (int64_t i = b; i < e; ++i) local += i % 7;
      sum += local;
    });
  EXPECT_EQ(sum.load(), 20 * [] {
    int64_t t = 0;
    for (int64_t i = 0; i < (1 << 16); ++i) t += i % 7;
    return t;
  }());
  // This thread and at least two workers (named spore-pool once they first run).
  EXPECT_GE(test::threads_of(getpid()).size(), 3u) << "the loops started no workers";
  const int self = (int)syscall(SYS_gettid);
  const std::string r = test::wait_until_all_sleep(getpid(), self, std::chrono::seconds(30));
  EXPECT_EQ(r, "") << "idle threads did not sleep";
}

// A child forked after the pool ran (Python's multiprocessing does it) has none of the parent's
// workers: its loops must still end, and run on workers of its own.
TEST(ThreadPoolIdle, AForkedChildRunsLoops) {
  ContextSettings s = context();
  s.num_threads = 3;
  ContextScope scope(s);
  auto run = [] {
    std::atomic<int64_t> covered{0};
    for (int round = 0; round < 10; ++round)
      cpu::parallel_for(1 << 14, 1, [&](int64_t b, int64_t e) { covered += e - b; });
    return covered.load() == 10 * (1 << 14);
  };
  ASSERT_TRUE(run());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the workers asleep in their wait
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  // The child: its loops end, and on workers of its own (not on the caller alone, as they would
  // if the pool still counted the parent's workers).
  if (pid == 0) _exit(run() && test::threads_of(getpid()).size() >= 3 ? 0 : 1);
  bool hung = false;
  const int status = test::wait_for_exit(pid, std::chrono::seconds(60), &hung);
  ASSERT_FALSE(hung) << "the forked child's loops hung";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_TRUE(run());  // the parent's pool goes on
}

}  // namespace
