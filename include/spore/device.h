// Device: which backend holds a tensor's memory, and which of its devices.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace spore {

// Backend ids: the CPU is always 0; CUDA always 1 (registered only in CUDA builds);
// further backends (tests, simulators) are registered at run time and get the next ids.
inline constexpr int kCpuBackend = 0;
inline constexpr int kCudaBackend = 1;
inline constexpr int kMaxBackends = 8;

struct Device {
  uint8_t backend = kCpuBackend;
  int16_t index = 0;

  static Device cpu() { return {}; }
  // "cpu", "cuda", "cuda:1", or the name of a registered backend. Throws kDevice with the
  // list of backends this build has when the name is unknown or its backend is absent.
  static Device parse(std::string_view text);
  std::string str() const;
  bool operator==(const Device& o) const { return backend == o.backend && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

}  // namespace spore
