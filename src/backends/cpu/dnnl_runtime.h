// What every oneDNN call of the CPU backend shares (conv_dnnl.cc, matmul_dnnl.cc): one engine,
// one stream and scratch buffer per thread, and the OpenMP thread count of the calling thread.
//
// NOTE [oneDNN runtime]
// * One CPU engine for the process; a stream per thread, because a stream is not safe to use
//   from two threads at once and a cached primitive may run on several threads.
// * Primitives are created with scratchpad_mode::user: execute() passes this thread's scratch
//   buffer (grown, never shrunk), so one cached primitive can run on several threads at once.
// * oneDNN parallelises with OpenMP, whose thread count is a per-thread setting: set_threads()
//   sets it to the calling thread's spore::num_threads() (NOTE [Context scopes]) before each
//   call, and before each primitive is created: oneDNN plans a primitive for the count current
//   at its creation. The OpenMP entry points are looked up at run time in the libgomp that libdnnl already
//   loaded, so Spore needs no OpenMP flags of its own for it.
// * execute() runs the primitive with the calling thread's asynchronous signals held and the
//   team's workers blocking them: oneDNN's JIT GEMM moves rsp into the heap, where a signal frame
//   would land (NOTE [Signals and kernels], signal_mask.h).
#pragma once
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

namespace spore::cpu::dnnl_rt {

dnnl::engine& engine();
// Sets the calling thread's OpenMP thread count to n (no call when it already is n).
void set_threads(int n);
// A memory object over caller-owned data (oneDNN takes a non-const pointer; inputs are not written).
dnnl::memory memory(const dnnl::memory::desc& desc, const void* data);
// Runs `prim` on this thread's stream with `args` plus the scratchpad `scratch` asks for, and
// waits for it. Throws dnnl::error as oneDNN does.
void execute(const dnnl::primitive& prim, const dnnl::memory::desc& scratch,
             std::unordered_map<int, dnnl::memory>& args);

}  // namespace spore::cpu::dnnl_rt
