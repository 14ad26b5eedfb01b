// A per-thread guard on copies of tensor values to the host (NOTE [Core hooks]).
//
// Graph tracing records ops, not values: a function that reads a tensor's value on the host
// (item, to_vector, printing) while being traced would bake that one value into the graph. The
// tracer (src/graph/) installs a guard for its thread; Tensor's host copies ask it first, and it
// throws. The core owns the hook so that it never depends on the graph module.
#pragma once

namespace spore {

class HostReadGuard {
 public:
  virtual ~HostReadGuard() = default;
  // Called before a host copy of a tensor's values on the guarded thread; throws to refuse it.
  virtual void on_host_read(const char* what) = 0;
};

// This thread's guard, or nullptr. set returns the previous one (guards nest).
HostReadGuard* host_read_guard();
HostReadGuard* set_host_read_guard(HostReadGuard* guard);

}  // namespace spore
