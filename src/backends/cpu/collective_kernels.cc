// Kernels of the collective ops (NOTE [Collective ops]): the data moves through the
// CollectiveRuntime spore::dist installs; without one this process is a group of one and every
// collective is a copy of its input.
#include <cstring>
#include <string>

#include "cpu_kernels.h"
#include "spore/collective.h"
#include "spore/error.h"

namespace spore::cpu {

namespace {

// A node's attributes that depend on the group (all_gather's and reduce_scatter's group size,
// broadcast's root) against the group it runs in: a graph compiled for 2 processes cannot run
// on 4, and a root outside the group names no process.
void check_group(const KernelCall& c, int size) {
  const OpId op = c.def.id;
  auto fail = [&](const std::string& what) {
    throw Error(ErrorCode::kValue, std::string(c.def.name) + ": " + what);
  };
  if (op == OpId::k_all_gather || op == OpId::k_reduce_scatter) {
    const int64_t built = c.attrs.i(op == OpId::k_all_gather ? 0 : 1);
    if (built != size)
      fail("the node was built for a group of " + std::to_string(built) + " processes, but this job has " +
           std::to_string(size) + (size == 1 ? " (spore::dist::init() was not called)" : "") +
           "; trace or export it again under the job's launcher");
  }
  if (op == OpId::k_broadcast && (c.attrs.i(0) < 0 || c.attrs.i(0) >= size))
    fail("root " + std::to_string(c.attrs.i(0)) + " is not a rank of this group of " + std::to_string(size));
}

void collective_kernel(const KernelCall& c) {
  CollectiveRuntime* rt = collective_runtime();
  check_group(c, rt ? rt->size() : 1);
  if (rt) return rt->run(c.def.id, c.inputs[0], c.outputs[0], c.attrs);
  // A group of one: the reduction, gather or broadcast of one tensor is that tensor.
  const Tensor in = c.inputs[0].contiguous();
  std::memcpy(c.outputs[0].data_ptr(), in.data_ptr(), in.nbytes());
}

}  // namespace

void register_collective_kernels() {
  for (OpId op : {OpId::k_all_reduce, OpId::k_broadcast, OpId::k_all_gather, OpId::k_reduce_scatter, OpId::k_barrier})
    for (DType d : kAllDTypes) register_kernel(op, kCpuBackend, d, &collective_kernel);
}

}  // namespace spore::cpu
