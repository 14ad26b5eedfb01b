#include "allocator.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

namespace spore {

namespace {
constexpr size_t kAlign = 64;
constexpr size_t kSmallMax = 64 * 1024;
constexpr int kSmallClasses = 11;  // 64 B .. 64 KiB
constexpr size_t kPerClassKeep = 64;
constexpr size_t kLargeCacheCap = size_t(2) << 30;
// A cached large block serves any request down to half its size (NOTE [Host allocator]).
constexpr size_t kLargeFitRatio = 2;

int small_class(size_t bytes) {
  int c = 0;
  size_t s = 64;
  while (s < bytes) s <<= 1, ++c;
  return c;
}
size_t small_size(int c) { return size_t(64) << c; }

// Rounds up to a class with 8 steps per power of two: at most 12.5% waste.
size_t large_size(size_t bytes) {
  size_t p = kSmallMax;
  while (p * 2 <= bytes) p <<= 1;
  size_t step = p / 8;
  return (bytes + step - 1) / step * step;
}

void* system_alloc(size_t bytes) {
  void* p = std::aligned_alloc(kAlign, bytes);
  if (!p) throw std::bad_alloc();
  return p;
}

// Set once a thread's cache is destroyed: tensors freed later on that thread (static tensors at
// exit) go straight to the system. A plain bool has no destructor, so it outlives the cache.
thread_local bool t_small_gone = false;
struct SmallCache {
  std::vector<void*> lists[kSmallClasses];
  ~SmallCache() {
    for (auto& l : lists)
      for (void* p : l) std::free(p);
    t_small_gone = true;
  }
};
thread_local SmallCache t_small;

struct LargeCache {
  std::mutex mu;
  std::multimap<size_t, void*> blocks;  // free blocks by their real size
  // The real size of every large block handed out: a request may get a bigger cached block, and
  // the caller frees it with the size it asked for.
  std::unordered_map<void*, size_t> handed_out;
  size_t bytes = 0;
};
LargeCache& large() {
  static LargeCache* c = new LargeCache();  // leaked on purpose: outlives static tensors
  return *c;
}
}  // namespace

// Under AddressSanitizer the caches would hide use-after-free: every block goes to the system.
// g++ defines __SANITIZE_ADDRESS__; clang 14 only answers __has_feature (the fuzz build).
#if defined(__SANITIZE_ADDRESS__)
#define SPORE_ASAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SPORE_ASAN_BUILD 1
#endif
#endif
#if defined(SPORE_ASAN_BUILD)
constexpr bool kUseCaches = false;
#else
constexpr bool kUseCaches = true;
#endif

void* host_alloc(size_t bytes) {
  if (bytes == 0) bytes = 1;
  if (!kUseCaches) return system_alloc((bytes + kAlign - 1) / kAlign * kAlign);
  if (bytes <= kSmallMax) {
    int c = small_class(bytes);
    if (t_small_gone) return system_alloc(small_size(c));
    auto& l = t_small.lists[c];
    if (!l.empty()) {
      void* p = l.back();
      l.pop_back();
      return p;
    }
    return system_alloc(small_size(c));
  }
  const size_t sz = large_size(bytes);
  LargeCache& lc = large();
  {
    std::lock_guard<std::mutex> lock(lc.mu);
    // Best fit: the smallest cached block that holds the request, if it is not too big for it.
    auto it = lc.blocks.lower_bound(sz);
    if (it != lc.blocks.end() && it->first / kLargeFitRatio <= sz) {
      void* p = it->second;
      lc.handed_out.emplace(p, it->first);
      lc.bytes -= it->first;
      lc.blocks.erase(it);
      return p;
    }
  }
  void* p = system_alloc(sz);
  std::lock_guard<std::mutex> lock(lc.mu);
  lc.handed_out.emplace(p, sz);
  return p;
}

void host_free(void* ptr, size_t bytes) {
  if (!ptr) return;
  if (!kUseCaches) return std::free(ptr);
  if (bytes == 0) bytes = 1;
  if (bytes <= kSmallMax) {
    if (t_small_gone) return std::free(ptr);
    auto& l = t_small.lists[small_class(bytes)];
    if (l.size() < kPerClassKeep) {
      l.push_back(ptr);
      return;
    }
    std::free(ptr);
    return;
  }
  LargeCache& lc = large();
  {
    std::lock_guard<std::mutex> lock(lc.mu);
    auto h = lc.handed_out.find(ptr);
    // Not found only for a block allocated before the cache existed (none today): its class size.
    const size_t sz = h != lc.handed_out.end() ? h->second : large_size(bytes);
    if (h != lc.handed_out.end()) lc.handed_out.erase(h);
    if (lc.bytes + sz <= kLargeCacheCap) {
      lc.blocks.emplace(sz, ptr);
      lc.bytes += sz;
      return;
    }
  }
  std::free(ptr);
}

size_t host_cached_bytes() {
  LargeCache& lc = large();
  std::lock_guard<std::mutex> lock(lc.mu);
  return lc.bytes;
}

void host_release_cache() {
  LargeCache& lc = large();
  std::lock_guard<std::mutex> lock(lc.mu);
  for (auto& [sz, p] : lc.blocks) std::free(p);
  lc.blocks.clear();
  lc.bytes = 0;
}

}  // namespace spore
