// NOTE [Signals and kernels]: no asynchronous signal is delivered to a thread inside a oneDNN
// primitive (its JIT GEMM points rsp into the heap); the caller holds them until the call returns,
// OpenMP workers block them for good. The Python side: tests/python/test_signals.py.
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_features.h"
#include "backends/cpu/signal_mask.h"
#include "backends/cpu/thread_pool.h"
#include "spore/context.h"
#include "spore/ops.h"
#include "spore/tensor.h"

namespace spore {
namespace {

std::atomic<int> g_handled{0};
void count_signal(int) { g_handled.fetch_add(1, std::memory_order_relaxed); }

// Installs count_signal for SIGUSR1 (a handled signal: the kind that used to smash the heap) and
// restores the previous action.
class Usr1Counter {
 public:
  Usr1Counter() {
    struct sigaction sa = {};
    sa.sa_handler = count_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, &previous_);
    g_handled = 0;
  }
  ~Usr1Counter() { sigaction(SIGUSR1, &previous_, nullptr); }

 private:
  struct sigaction previous_ = {};
};

bool blocked_here(int sig) {
  sigset_t now;
  pthread_sigmask(SIG_BLOCK, nullptr, &now);
  return sigismember(&now, sig) == 1;
}

TEST(SignalMask, HeldSignalsArriveWhenTheScopeEnds) {
  Usr1Counter counter;
  ASSERT_FALSE(blocked_here(SIGUSR1));
  {
    cpu::SignalsHeld held;
    EXPECT_TRUE(blocked_here(SIGUSR1));
    EXPECT_TRUE(blocked_here(SIGINT));
    EXPECT_FALSE(blocked_here(SIGSEGV));  // a fault of this thread must still be reported
    pthread_kill(pthread_self(), SIGUSR1);
    EXPECT_EQ(g_handled.load(), 0);  // pending, not delivered inside the scope
    sigset_t pending;
    sigpending(&pending);
    EXPECT_EQ(sigismember(&pending, SIGUSR1), 1);
  }
  EXPECT_EQ(g_handled.load(), 1);  // delivered once the scope ended
  EXPECT_FALSE(blocked_here(SIGUSR1));
  for (int sync : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT})
    EXPECT_EQ(sigismember(&cpu::async_signals(), sync), 0) << sync;
  for (int async : {SIGINT, SIGTERM, SIGUSR1, SIGUSR2, SIGPROF, SIGALRM, SIGCHLD})
    EXPECT_EQ(sigismember(&cpu::async_signals(), async), 1) << async;
}

TEST(SignalMask, OpenMpWorkersBlockSignalsAndTheCallerKeepsThem) {
  ContextGuard guard;
  set_num_threads(4);
  std::mutex mu;
  std::map<std::thread::id, bool> blocked;  // thread -> SIGINT blocked while it ran a chunk
  // The caller claims chunks too, and a worker the OS has not scheduled yet claims none (NOTE
  // [Threads that sleep]): on a loaded machine one region can pass on the caller alone, so
  // regions repeat until a worker has run a chunk (seconds at most).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (blocked.size() < 2 && std::chrono::steady_clock::now() < deadline)
    cpu::parallel_for(64, 1, [&](int64_t, int64_t) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // every team member gets chunks
      std::lock_guard<std::mutex> lock(mu);
      blocked[std::this_thread::get_id()] = blocked_here(SIGINT);
    });
  ASSERT_GE(blocked.size(), 2u) << "no worker ran a chunk";
  for (const auto& [id, b] : blocked) {
    if (id == std::this_thread::get_id()) EXPECT_FALSE(b) << "the caller's signals were blocked";
    else EXPECT_TRUE(b) << "a worker takes signals";
  }
  EXPECT_FALSE(blocked_here(SIGINT));
}

// The body of SignalsDuringOneDnnMatmulsLeaveResultsAndHeapIntact, in a child process started
// with ONEDNN_MAX_CPU_ISA set (oneDNN reads it when it loads, before main).
void matmuls_under_signals() {
  ContextGuard guard;
  set_num_threads(2);
  // 256 x 256 x 256 runs the JIT GEMM that moves rsp at AVX2 (192 x 160 x 224 did not crash).
  const Tensor a = random_normal({256, 256}, 1), b = random_normal({256, 256}, 2);
  const std::vector<double> ref = matmul(cast(a, DType::kFloat64), cast(b, DType::kFloat64)).to_vector<double>();
  Usr1Counter counter;
  std::atomic<bool> stop{false};
  const pthread_t target = pthread_self();
  std::thread sender([&] {
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &usr1, nullptr);  // process-directed ones go to the matmul's threads
    for (int i = 0; !stop.load(); ++i) {
      if (i % 2) pthread_kill(target, SIGUSR1);
      else kill(getpid(), SIGUSR1);
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  });
  double worst = 0;
  for (int it = 0; it < 1000; ++it) {
    const std::vector<float> got = matmul(a, b).to_vector<float>();
    for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - ref[i]));
  }
  stop = true;
  sender.join();
  EXPECT_LT(worst, 1e-3);
  EXPECT_GT(g_handled.load(), 0);  // the signals did arrive (between the calls)
}

// Handled signals aimed at a thread that runs oneDNN matmuls, and at the process, while it runs
// them: every result stays right and the heap intact. In a child limited to oneDNN's AVX2 kernels
// where the CPU has AVX2 (the JIT GEMM that moves rsp). Without the fix the child aborted in
// glibc's free() ("corrupted size vs. prev_size while consolidating", "free(): invalid pointer")
// in 4 runs of 4.
TEST(SignalMask, SignalsDuringOneDnnMatmulsLeaveResultsAndHeapIntact) {
  if (std::getenv("SPORE_SIGNAL_MASK_CHILD")) return matmuls_under_signals();
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
  env_strings.emplace_back("SPORE_SIGNAL_MASK_CHILD=1");
  if (cpu::cpu_features().avx2) env_strings.emplace_back("ONEDNN_MAX_CPU_ISA=AVX2");
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string exe = "/proc/self/exe", filter = "--gtest_filter=SignalMask.SignalsDuringOneDnnMatmulsLeaveResultsAndHeapIntact";
  char* argv[] = {exe.data(), filter.data(), nullptr};
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv, envp.data()), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status) << " (its output is above)";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child's checks failed (its output is above)";
}

}  // namespace
}  // namespace spore
