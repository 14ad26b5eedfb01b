// NOTE [oneDNN runtime] in dnnl_runtime.h.
#include "dnnl_runtime.h"

#include <dlfcn.h>

#include <vector>

#include "signal_mask.h"
#include "thread_pool.h"

namespace spore::cpu::dnnl_rt {

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

void set_threads(int n) {
  using SetFn = void (*)(int);
  using GetFn = int (*)();
  static SetFn set = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  static GetFn get = reinterpret_cast<GetFn>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
  if (set && get && get() != n) set(n);
}

dnnl::memory memory(const dnnl::memory::desc& desc, const void* data) {
  return dnnl::memory(desc, engine(), const_cast<void*>(data));
}

void execute(const dnnl::primitive& prim, const dnnl::memory::desc& scratch,
             std::unordered_map<int, dnnl::memory>& args) {
  thread_local dnnl::stream stream(engine());
  thread_local std::vector<unsigned char> scratch_buf;
  const size_t sbytes = scratch.get_size();
  if (sbytes) {
    if (scratch_buf.size() < sbytes) scratch_buf.resize(sbytes);
    args.insert_or_assign(DNNL_ARG_SCRATCHPAD, memory(scratch, scratch_buf.data()));
  }
  // No asynchronous signal reaches a thread inside oneDNN's JIT kernels (NOTE [Signals and
  // kernels]): held on this thread until the call returns, blocked for good on the workers.
  SignalsHeld held;
  shield_openmp_team();
  prim.execute(stream, args);
  stream.wait();
}

}  // namespace spore::cpu::dnnl_rt
