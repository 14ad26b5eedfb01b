// Philox-4x32-10, the counter-based generator of NOTE [Random numbers] (include/spore/ops.h),
// written from Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as easy as 1, 2, 3"
// (SC 2011). A block of four 32-bit words is a pure function of (counter, key): ten rounds of
// two 32x32->64 multiplies, with the key bumped by Weyl constants between rounds. Element i of a
// random op takes its words from counter block i / (words per element) with the seed as key, so
// values do not depend on how the work is split across threads or devices.
#pragma once
#include <array>
#include <cstdint>

namespace spore::cpu {

using PhiloxBlock = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

inline PhiloxBlock philox4x32_10(PhiloxBlock ctr, PhiloxKey key) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;  // round multipliers
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;  // key schedule (golden ratio, sqrt 3)
  for (int round = 0; round < 10; ++round) {
    if (round) {
      key[0] += kW0;
      key[1] += kW1;
    }
    const uint64_t p0 = (uint64_t)kM0 * ctr[0], p1 = (uint64_t)kM1 * ctr[2];
    const uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    const uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    ctr = {hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0};
  }
  return ctr;
}

// The four words of counter block `block` for a 64-bit seed.
inline PhiloxBlock philox_block(uint64_t seed, uint64_t block) {
  return philox4x32_10({(uint32_t)block, (uint32_t)(block >> 32), 0u, 0u},
                       {(uint32_t)seed, (uint32_t)(seed >> 32)});
}

}  // namespace spore::cpu
