#include "spore/context.h"

#include <atomic>
#include <deque>
#include <mutex>
#include <thread>

#include "spore/error.h"

namespace spore {

// NOTE [Context scopes]
namespace {
std::mutex& default_mutex() {
  static std::mutex m;
  return m;
}
// Every default published after the first; kept so that references from context() never dangle.
std::deque<ContextSettings>& defaults() {
  static auto* d = new std::deque<ContextSettings>();  // leaked: read by threads at exit
  return *d;
}
// Both constant-initialised (an address is a constant), so context() works during static
// initialisation of other files and costs no guard check.
const ContextSettings g_initial{};
std::atomic<const ContextSettings*> g_default{&g_initial};
std::atomic<const ContextSettings*>& current_default() { return g_default; }
thread_local const ContextSettings* t_scope = nullptr;

void check_threads(int n, const char* what) {
  if (n < 0)
    throw Error(ErrorCode::kValue, std::string(what) + ": num_threads must be >= 0 (0 = one per core), got " +
                                       std::to_string(n));
}

// Publishes a copy of the default with `change` applied.
template <class F>
void update_default(F change) {
  std::lock_guard<std::mutex> lock(default_mutex());
  ContextSettings next = *current_default().load(std::memory_order_acquire);
  change(next);
  defaults().push_back(next);
  current_default().store(&defaults().back(), std::memory_order_release);
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

const ContextSettings& context() {
  const ContextSettings* s = t_scope;
  return s ? *s : *current_default().load(std::memory_order_acquire);
}

ContextSettings default_context() { return *current_default().load(std::memory_order_acquire); }

void set_default_context(const ContextSettings& settings) {
  check_threads(settings.num_threads, "set_default_context");
  update_default([&](ContextSettings& s) { s = settings; });
}
void set_exec_mode(ExecMode mode) {
  update_default([&](ContextSettings& s) { s.mode = mode; });
}
void set_device(Device device) {
  update_default([&](ContextSettings& s) { s.device = device; });
}
void set_device(const std::string& device) { set_device(Device::parse(device)); }
void set_num_threads(int n) {
  check_threads(n, "set_num_threads");
  update_default([&](ContextSettings& s) { s.num_threads = n; });
}
int num_threads() {
  static const int cores = [] {
    unsigned c = std::thread::hardware_concurrency();
    return c == 0 ? 1 : (int)c;
  }();
  const int n = context().num_threads;
  return n > 0 ? n : cores;
}
void set_precision_mode(PrecisionMode mode) {
  update_default([&](ContextSettings& s) { s.precision = mode; });
}

ContextScope::ContextScope(const ContextSettings& settings) : settings_(settings), outer_(t_scope) {
  check_threads(settings.num_threads, "ContextScope");
  t_scope = &settings_;
}
ContextScope::ContextScope(PrecisionMode precision) : ContextScope([&] {
    ContextSettings s = context();
    s.precision = precision;
    return s;
  }()) {}
ContextScope::ContextScope(Device device) : ContextScope([&] {
    ContextSettings s = context();
    s.device = device;
    return s;
  }()) {}
ContextScope::~ContextScope() { t_scope = outer_; }

ContextGuard::~ContextGuard() { set_default_context(saved_); }

}  // namespace spore
