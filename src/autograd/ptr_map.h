// A small open-addressing hash map keyed by pointer, for the tape's per-tensor bookkeeping.
// A training step records a few dozen ops and looks tensors up a few hundred times; with
// std::unordered_map every insert allocated a node, which profiles showed as a fifth of a small
// step's time. Here the slots live in one array (linear probing, grown at half load), so a step
// allocates a handful of times. Keys are never erased; nullptr cannot be a key.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace spore::autograd_detail {

template <typename V>
class PtrMap {
 public:
  explicit PtrMap(size_t expected = 32) { rehash(capacity_for(expected)); }

  // The value for `key`, default-constructed (and `inserted` set) when it was absent.
  V& get(const void* key, bool* inserted = nullptr) {
    if ((size_ + 1) * 2 > keys_.size()) rehash(keys_.size() * 2);
    size_t i = slot(key);
    if (keys_[i] != key) {
      keys_[i] = key;
      ++size_;
      if (inserted) *inserted = true;
    } else if (inserted) {
      *inserted = false;
    }
    return values_[i];
  }
  V* find(const void* key) {
    size_t i = slot(key);
    return keys_[i] == key ? &values_[i] : nullptr;
  }
  const V* find(const void* key) const { return const_cast<PtrMap*>(this)->find(key); }
  bool contains(const void* key) const { return find(key) != nullptr; }
  size_t size() const { return size_; }
  size_t capacity() const { return keys_.size(); }
  // Empties the map, releasing the values, and keeps the slots for the next use.
  void clear() {
    if (size_ == 0) return;
    for (size_t i = 0; i < keys_.size(); ++i)
      if (keys_[i]) {
        keys_[i] = nullptr;
        values_[i] = V();
      }
    size_ = 0;
  }

 private:
  static size_t capacity_for(size_t n) {
    size_t c = 16;
    while (c < n * 2) c *= 2;
    return c;
  }
  // The slot holding `key`, or the empty slot where it would go.
  size_t slot(const void* key) const {
    const size_t mask = keys_.size() - 1;
    // Tensor impls are 64-byte aligned allocations: drop the low bits, mix the rest.
    uint64_t h = (uint64_t)(uintptr_t)key >> 4;
    h *= 0x9E3779B97F4A7C15ull;
    size_t i = (size_t)(h >> 32) & mask;
    while (keys_[i] != nullptr && keys_[i] != key) i = (i + 1) & mask;
    return i;
  }
  void rehash(size_t capacity) {
    std::vector<const void*> old_keys(capacity, nullptr);
    std::vector<V> old_values(capacity);
    old_keys.swap(keys_);
    old_values.swap(values_);
    size_ = 0;
    for (size_t i = 0; i < old_keys.size(); ++i)
      if (old_keys[i]) get(old_keys[i]) = std::move(old_values[i]);
  }

  std::vector<const void*> keys_;
  std::vector<V> values_;
  size_t size_ = 0;
};

}  // namespace spore::autograd_detail
