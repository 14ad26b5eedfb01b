// NOTE [Host allocator]: the large-block cache's reuse rules, observed through the pointers it
// hands out and host_cached_bytes(). Under AddressSanitizer the caches are off and these skip.
#include <gtest/gtest.h>

#include "core/allocator.h"

namespace spore {
namespace {

constexpr size_t kMiB = size_t(1) << 20;

// True when this build caches large blocks (every build but the sanitized ones).
bool caches_on() {
  host_release_cache();
  void* p = host_alloc(kMiB);
  host_free(p, kMiB);
  const bool on = host_cached_bytes() > 0;
  host_release_cache();
  return on;
}

TEST(HostAllocator, ASmallerRequestReusesACachedBlockUpToTwiceItsSize) {
  if (!caches_on()) GTEST_SKIP() << "caches are off in sanitized builds";
  void* big = host_alloc(kMiB);
  host_free(big, kMiB);
  const size_t cached = host_cached_bytes();
  EXPECT_GE(cached, kMiB);
  // 600 KiB rounds to a smaller class than 1 MiB, yet takes the cached 1 MiB block.
  void* p = host_alloc(600 * 1024);
  EXPECT_EQ(p, big);
  EXPECT_EQ(host_cached_bytes(), 0u);
  // Freed with the size it was asked for, the block returns to the cache at its real size.
  host_free(p, 600 * 1024);
  EXPECT_EQ(host_cached_bytes(), cached);
  // And it then serves a full 1 MiB request again.
  void* again = host_alloc(kMiB);
  EXPECT_EQ(again, big);
  host_free(again, kMiB);
  host_release_cache();
}

TEST(HostAllocator, ABlockMoreThanTwiceTheRequestIsLeftForLargerOnes) {
  if (!caches_on()) GTEST_SKIP() << "caches are off in sanitized builds";
  void* big = host_alloc(4 * kMiB);
  host_free(big, 4 * kMiB);
  void* small = host_alloc(kMiB);
  EXPECT_NE(small, big);
  EXPECT_GE(host_cached_bytes(), 4 * kMiB);
  void* p = host_alloc(3 * kMiB);
  EXPECT_EQ(p, big);
  host_free(p, 3 * kMiB);
  host_free(small, kMiB);
  host_release_cache();
  EXPECT_EQ(host_cached_bytes(), 0u);
}

TEST(HostAllocator, TheSmallestFittingBlockIsTaken) {
  if (!caches_on()) GTEST_SKIP() << "caches are off in sanitized builds";
  void* a = host_alloc(2 * kMiB);
  void* b = host_alloc(kMiB + kMiB / 4);
  host_free(a, 2 * kMiB);
  host_free(b, kMiB + kMiB / 4);
  void* p = host_alloc(kMiB);
  EXPECT_EQ(p, b);
  void* q = host_alloc(kMiB);
  EXPECT_EQ(q, a);
  host_free(p, kMiB);
  host_free(q, kMiB);
  host_release_cache();
}

}  // namespace
}  // namespace spore
