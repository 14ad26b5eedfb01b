// NOTE [Context scopes]: per-thread settings over a process default.
#include <gtest/gtest.h>

#include <thread>

#include "backends/cpu/thread_pool.h"
#include "spore/context.h"
#include "spore/error.h"
#include "spore/ops.h"

namespace spore {
namespace {

TEST(Context, ScopeOverridesThisThreadAndRestores) {
  ContextGuard guard;
  set_precision_mode(PrecisionMode::kKeepType);
  {
    ContextScope outer(PrecisionMode::kAllowMixed);
    EXPECT_EQ(context().precision, PrecisionMode::kAllowMixed);
    {
      ContextSettings s = context();
      s.num_threads = 1;
      ContextScope inner(s);
      EXPECT_EQ(context().num_threads, 1);
      EXPECT_EQ(num_threads(), 1);
      EXPECT_EQ(context().precision, PrecisionMode::kAllowMixed);  // inherited from the outer scope
    }
    EXPECT_NE(context().num_threads, 1);
    // set_* changes the process default, not the open scope.
    set_precision_mode(PrecisionMode::kKeepType);
    EXPECT_EQ(context().precision, PrecisionMode::kAllowMixed);
    EXPECT_EQ(default_context().precision, PrecisionMode::kKeepType);
  }
  EXPECT_EQ(context().precision, PrecisionMode::kKeepType);
}

TEST(Context, NewThreadsStartFromTheProcessDefaultNotTheCreatorsScope) {
  ContextGuard guard;
  set_precision_mode(PrecisionMode::kKeepType);
  ContextScope scope(PrecisionMode::kAllowMixed);
  PrecisionMode seen = PrecisionMode::kAllowMixed;
  std::thread([&] { seen = context().precision; }).join();
  EXPECT_EQ(seen, PrecisionMode::kKeepType);
}

TEST(Context, DefaultChangesReachThreadsWithoutAScope) {
  ContextGuard guard;
  set_num_threads(3);
  int seen = 0;
  std::thread([&] { seen = num_threads(); }).join();
  EXPECT_EQ(seen, 3);
}

// The CPU pool takes its size from the calling thread's scope: a request scoped to one thread
// runs its kernels serially while other threads keep the default.
TEST(Context, ThreadPoolFollowsTheCallersScope) {
  ContextGuard guard;
  set_num_threads(4);
  ContextSettings s = context();
  s.num_threads = 1;
  ContextScope one(s);
  EXPECT_EQ(cpu::pool_threads(), 1);
  int other = 0;
  std::thread([&] { other = cpu::pool_threads(); }).join();
  EXPECT_EQ(other, 4);
  int64_t covered = 0;  // serial: one chunk on this thread, so no atomics are needed
  cpu::parallel_for(100000, 1, [&](int64_t b, int64_t e) { covered += e - b; });
  EXPECT_EQ(covered, 100000);
}

TEST(Context, BadThreadCountsAreRefused) {
  ContextSettings s = context();
  s.num_threads = -2;
  EXPECT_THROW(ContextScope bad(s), Error);
  EXPECT_THROW(set_num_threads(-1), Error);
  EXPECT_THROW(set_default_context(s), Error);
}

}  // namespace
}  // namespace spore
