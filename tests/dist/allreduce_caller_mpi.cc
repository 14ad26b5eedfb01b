// Which thread runs MPI_Allreduce (NOTE [The caller runs its own all-reduce]): a blocking
// all_reduce on the caller's own thread, a non-blocking one that nobody waits for on the MPI
// backend's all-reduce thread. MPI's profiling interface tells: this program defines
// MPI_Allreduce itself, records the calling thread and the element count, and forwards to
// PMPI_Allreduce (the library's own entry under its second name), so spore_dist's calls land here.
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "spore/dist.h"
#include "spore/ops.h"

namespace {

struct Call {
  std::thread::id thread;
  int count;
};
std::mutex g_mu;
std::vector<Call> g_calls;

std::vector<Call> calls_of(int count) {
  std::lock_guard<std::mutex> lock(g_mu);
  std::vector<Call> out;
  for (const Call& c : g_calls)
    if (c.count == count) out.push_back(c);
  return out;
}

}  // namespace

extern "C" int MPI_Allreduce(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op,
                             MPI_Comm comm) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_calls.push_back(Call{std::this_thread::get_id(), count});
  }
  return PMPI_Allreduce(send, recv, count, type, op, comm);
}

namespace spore::dist {
namespace {

TEST(AllReduceThread, BlockingCallsRunOnTheCallersThread) {
  ProcessGroup& g = world();
  if (std::string(g.backend_name()) != "mpi" || g.size() < 2) GTEST_SKIP() << "needs MPI ranks";
  // Counts no other test uses, so the records are this test's.
  const int n1 = 1237, n2 = 1239;
  Tensor x = full({n1}, 1.0 + g.rank());
  Tensor sum = g.all_reduce(x);
  EXPECT_EQ(sum.to_vector<float>()[0], (float)(g.size() * (g.size() + 1) / 2));
  Tensor buf = full({n2}, 2.0);
  g.all_reduce_inplace(buf, ReduceOp::kSum, false);
  EXPECT_EQ(buf.to_vector<float>()[n2 - 1], 2.0f * (float)g.size());
  for (int n : {n1, n2}) {
    std::vector<Call> c = calls_of(n);
    ASSERT_EQ(c.size(), 1u) << n;
    EXPECT_EQ(c[0].thread, std::this_thread::get_id())
        << "a blocking all_reduce of " << n << " elements was handed to another thread";
  }
}

TEST(AllReduceThread, NonBlockingCallsProgressOnTheBackendsThread) {
  ProcessGroup& g = world();
  if (std::string(g.backend_name()) != "mpi" || g.size() < 2) GTEST_SKIP() << "needs MPI ranks";
  const int n = 1241;
  Work w = g.iall_reduce(full({n}, 3.0));
  // Nobody waits: test() only looks, so the call must complete on its own.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!w.test() && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
  ASSERT_TRUE(w.test());
  EXPECT_EQ(w.wait().to_vector<float>()[0], 3.0f * (float)g.size());
  std::vector<Call> c = calls_of(n);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_NE(c[0].thread, std::this_thread::get_id());
}

// Calls queued behind one that runs keep their order on every rank, whoever runs each: three
// non-blocking all-reduces, then a blocking one, waited in reverse.
TEST(AllReduceThread, QueuedAndBlockingCallsKeepTheirOrder) {
  ProcessGroup& g = world();
  std::vector<Work> works;
  for (int k = 0; k < 3; ++k) works.push_back(g.iall_reduce(full({40000 + k}, (double)(k + 1))));
  Tensor last = g.all_reduce(full({7}, (double)g.rank()));
  EXPECT_EQ(last.to_vector<float>()[6], (float)(g.size() * (g.size() - 1) / 2));
  for (int k = 2; k >= 0; --k) {
    std::vector<float> v = works[(size_t)k].wait().to_vector<float>();
    EXPECT_EQ(v.front(), (float)((k + 1) * g.size()));
    EXPECT_EQ(v.back(), (float)((k + 1) * g.size()));
  }
}

}  // namespace
}  // namespace spore::dist
