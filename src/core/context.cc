#include "spore/context.h"

#include "spore/error.h"
#include "thread_pool.h"

namespace spore {

namespace {
ContextSettings& settings() {
  static ContextSettings s;
  return s;
}
}  // namespace

const char* exec_mode_name(ExecMode m) { return m == ExecMode::kEager ? "eager" : "graph"; }
const char* precision_mode_name(PrecisionMode m) {
  return m == PrecisionMode::kKeepType ? "keep_type" : "allow_mixed";
}
PrecisionMode precision_mode_from_name(const std::string& name) {
  if (name == "keep_type" || name == "must_keep_origin_dtype") return PrecisionMode::kKeepType;
  if (name == "allow_mixed" || name == "allow_mix_precision") return PrecisionMode::kAllowMixed;
  throw Error(ErrorCode::kValue, "unknown precision mode '" + name + "'; expected keep_type or allow_mixed");
}

const ContextSettings& context() { return settings(); }
void set_exec_mode(ExecMode mode) { settings().mode = mode; }
void set_device(Device device) { settings().device = device; }
void set_device(const std::string& device) { settings().device = Device::parse(device); }
void set_num_threads(int n) {
  if (n < 0) throw Error(ErrorCode::kValue, "set_num_threads: n must be >= 0 (0 = one per core), got " + std::to_string(n));
  settings().num_threads = n;
  cpu::set_pool_threads(n);
}
int num_threads() { return cpu::pool_threads(); }
void set_precision_mode(PrecisionMode mode) { settings().precision = mode; }

ContextGuard::~ContextGuard() {
  settings().mode = saved_.mode;
  settings().device = saved_.device;
  settings().precision = saved_.precision;
  if (saved_.num_threads != settings().num_threads) set_num_threads(saved_.num_threads);
}

}  // namespace spore
