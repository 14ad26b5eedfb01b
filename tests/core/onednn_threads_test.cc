// NOTE [Threads that sleep]: how many OpenMP threads a oneDNN call may use. Small products run on
// the calling thread alone (waking a sleeping worker costs more than it saves); large ones use
// the context's threads, except inside a pool chunk.
#include <gtest/gtest.h>

#include <atomic>

#include "backends/cpu/pool_region.h"
#include "backends/cpu/thread_pool.h"
#include "spore/context.h"

namespace spore::cpu {
namespace {

TEST(OneDnnThreads, SmallProblemsRunOnTheCallingThreadAlone) {
  const int saved = num_threads();
  set_num_threads(2);
  EXPECT_EQ(onednn_threads(0), 1);
  EXPECT_EQ(onednn_threads(64 * 64 * 64), 1);  // an LSTM step's gate product
  EXPECT_EQ(onednn_threads(kSerialOneDnnMacs - 1), 1);
  EXPECT_EQ(onednn_threads(kSerialOneDnnMacs), 2);
  EXPECT_EQ(onednn_threads(int64_t{1} << 30), 2);
  std::atomic<int> inside{0};
  parallel_for(2, 1, [&](int64_t, int64_t) { inside = onednn_threads(int64_t{1} << 30); });
  EXPECT_EQ(inside.load(), 1) << "inside a pool chunk";
  set_num_threads(1);
  EXPECT_EQ(onednn_threads(int64_t{1} << 30), 1);
  set_num_threads(saved);
}

}  // namespace
}  // namespace spore::cpu
