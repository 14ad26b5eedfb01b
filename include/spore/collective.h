// The collective ops' link to the other processes of a job (NOTE [Collective ops]).
//
// all_reduce, broadcast, all_gather, reduce_scatter and barrier are registry ops like any other
// (src/ops/collective.cc): a jit trace records them as graph nodes, the tape differentiates them,
// the executor runs them. Their kernels (src/backends/cpu/collective_kernels.cc) move data through
// the CollectiveRuntime installed here, which the core only declares: spore::dist::init()
// installs one over its process group (src/dist/collective_runtime.cc) and finalize() removes
// it. Without one the process is a group of one (get_group_size() is 1 before init), so the ops
// copy, and a node built for more processes is refused (kValue) naming both sizes.
#pragma once
#include <cstdint>

#include "spore/op_registry.h"

namespace spore {

// The reduction of all_reduce and reduce_scatter, attribute "op" (spore::dist::ReduceOp's order).
enum class CollectiveReduce : int64_t { kSum = 0, kMean = 1, kMax = 2 };

class CollectiveRuntime {
 public:
  virtual ~CollectiveRuntime() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Runs the collective op `op` on `input` into `output` (allocated, contiguous, of the inferred
  // shape and dtype) and returns when it is complete on this rank. Errors are spore::Error
  // (a watchdog's kIO included).
  virtual void run(OpId op, const Tensor& input, Tensor& output, const Attrs& attrs) = 0;
};

// Installs (nullptr: removes) the runtime the collective kernels use. Not thread-safe against
// running collectives: dist::init and finalize call it.
void set_collective_runtime(CollectiveRuntime* runtime);
CollectiveRuntime* collective_runtime();
// The rank and size the collective ops see: the runtime's, or 0 and 1 without one.
int collective_rank();
int collective_size();

}  // namespace spore
