// Which CPU the MPI backend's all-reduce thread runs on (NOTE [Keeping the ranks' all-reduce
// threads apart]).
#pragma once
#include <sched.h>

#include <optional>

namespace spore::dist::detail {

// The CPU for local rank `local_rank` of `local_size` ranks on this node, given this process's
// affinity mask `allowed`: the local_rank-th allowed CPU when every local rank can have one of its
// own (the ranks of one launch share the mask when the launcher did not bind them), nothing when
// the ranks outnumber the allowed CPUs (oversubscribed: the thread must float and MPI yields) or
// when there is one rank (no peer to meet on a CPU).
std::optional<int> allreduce_thread_cpu(const cpu_set_t& allowed, int local_rank, int local_size);

}  // namespace spore::dist::detail
