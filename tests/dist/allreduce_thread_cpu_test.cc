// The all-reduce thread's CPU (NOTE [Keeping the ranks' all-reduce threads apart]): one of its
// own per local rank when the ranks fit on the CPUs they may use, none when they do not.
#include <gtest/gtest.h>

#include <set>

#include "dist/allreduce_thread_cpu.h"

namespace spore::dist::detail {
namespace {

cpu_set_t cpus(std::initializer_list<int> list) {
  cpu_set_t s;
  CPU_ZERO(&s);
  for (int c : list) CPU_SET(c, &s);
  return s;
}

TEST(AllReduceThreadCpu, EachLocalRankGetsAnAllowedCpuOfItsOwn) {
  const cpu_set_t allowed = cpus({2, 3, 5, 8});  // a container's cpuset: not 0..n-1
  for (int size : {2, 3, 4}) {
    std::set<int> seen;
    for (int r = 0; r < size; ++r) {
      std::optional<int> c = allreduce_thread_cpu(allowed, r, size);
      ASSERT_TRUE(c.has_value()) << r << " of " << size;
      EXPECT_TRUE(CPU_ISSET(*c, &allowed)) << *c;
      seen.insert(*c);
    }
    EXPECT_EQ(seen.size(), (size_t)size);
  }
}

TEST(AllReduceThreadCpu, OversubscribedOrAloneFloats) {
  // More local ranks than CPUs (mpirun --oversubscribe), a rank already bound to one core by
  // its launcher while a peer exists, or a single rank: no CPU chosen.
  EXPECT_FALSE(allreduce_thread_cpu(cpus({0, 1}), 0, 4).has_value());
  EXPECT_FALSE(allreduce_thread_cpu(cpus({1}), 1, 2).has_value());
  EXPECT_FALSE(allreduce_thread_cpu(cpus({0, 1, 2, 3}), 0, 1).has_value());
  EXPECT_FALSE(allreduce_thread_cpu(cpus({0, 1}), 2, 2).has_value());  // not a local rank
}

}  // namespace
}  // namespace spore::dist::detail
