// Context: process-wide execution settings, in MindSpore's terms (set_context).
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

const ContextSettings& context();
void set_exec_mode(ExecMode mode);
void set_device(Device device);
void set_device(const std::string& device);  // "cpu", "cuda:0"
void set_num_threads(int n);  // 0 picks the core count
int num_threads();
void set_precision_mode(PrecisionMode mode);

// Restores the previous settings when it goes out of scope (tests, probes).
class ContextGuard {
 public:
  ContextGuard() : saved_(context()) {}
  ~ContextGuard();

 private:
  ContextSettings saved_;
};

}  // namespace spore
