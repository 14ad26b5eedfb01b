// Context: execution settings in MindSpore's terms (set_context), per thread with a process
// default (NOTE [Context scopes]).
#pragma once
#include <string>

#include "spore/device.h"

namespace spore {

enum class ExecMode { kEager, kGraph };  // MindSpore: PYNATIVE_MODE, GRAPH_MODE

// NOTE [Precision modes]
// kKeepType: an op runs in the dtype its inputs promote to, or fails at dispatch with an error
//   that names the op, the dtypes, the device and the dtypes that device supports (MindSpore's
//   "must_keep_origin_dtype"; the chapter's EZ1001 on fp32 matmul).
// kAllowMixed: when the backend lacks that dtype, the op casts its inputs to the closest dtype
//   the backend has (float32 -> float16 -> bfloat16, widening first), runs, and casts the result
//   back, so the caller still sees the dtype it asked for ("allow_mix_precision").
enum class PrecisionMode { kKeepType, kAllowMixed };

const char* exec_mode_name(ExecMode m);
const char* precision_mode_name(PrecisionMode m);
PrecisionMode precision_mode_from_name(const std::string& name);

struct ContextSettings {
  ExecMode mode = ExecMode::kEager;
  Device device;  // default device of tensors created without one
  int num_threads = 0;  // 0: one per core
  PrecisionMode precision = PrecisionMode::kKeepType;
};

// NOTE [Context scopes]
// Each thread reads its settings through context(): the innermost ContextScope open on that
// thread, else the process default. The set_* functions change the process default, as
// MindSpore's set_context does: every thread without a scope sees the change at its next op, and
// new threads start from it. A server (or a Python thread) that wants settings of its own for one
// request opens a ContextScope; nothing it sets there is seen by any other thread. context() is
// on the dispatch path, so it takes no lock: a thread_local pointer to the scope, or an atomic
// pointer to the current default. A default is never changed in place: set_* publishes a new
// copy and keeps the old ones (settings change rarely), so a reference from context() stays valid.
// Kernels that run on the thread pool's workers see the default, not the caller's scope; the
// pool itself takes its thread count from the calling thread.
const ContextSettings& context();
// A copy of the process default.
ContextSettings default_context();
void set_default_context(const ContextSettings& settings);
void set_exec_mode(ExecMode mode);
void set_device(Device device);
void set_device(const std::string& device);  // "cpu", "cuda:0"
void set_num_threads(int n);  // 0 picks the core count
// Threads the calling thread's kernels use (its context's num_threads; 0 resolves to the cores).
int num_threads();
void set_precision_mode(PrecisionMode mode);

// This thread's settings until the scope ends; scopes nest. Open and close it on one thread.
class ContextScope {
 public:
  explicit ContextScope(const ContextSettings& settings);
  explicit ContextScope(PrecisionMode precision);  // the current settings, with this mode
  explicit ContextScope(Device device);            // the current settings, on this device
  ~ContextScope();
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  ContextSettings settings_;
  const ContextSettings* outer_;
};

// Restores the process default when it goes out of scope (tests, probes that call set_*).
class ContextGuard {
 public:
  ContextGuard() : saved_(default_context()) {}
  ~ContextGuard();

 private:
  ContextSettings saved_;
};

}  // namespace spore
