// NOTE [Keeping the ranks' all-reduce threads apart]
#include "dist/allreduce_thread_cpu.h"

namespace spore::dist::detail {

std::optional<int> allreduce_thread_cpu(const cpu_set_t& allowed, int local_rank, int local_size) {
  if (local_size < 2 || local_rank < 0 || local_rank >= local_size) return std::nullopt;
  if (CPU_COUNT(&allowed) < local_size) return std::nullopt;
  int seen = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    if (seen++ == local_rank) return cpu;
  }
  return std::nullopt;
}

}  // namespace spore::dist::detail
