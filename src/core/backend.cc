// Backend registry and device names (NOTE [Backends] in include/spore/backend.h).
#include "spore/backend.h"

#include <array>
#include <atomic>
#include <mutex>
#include <utility>
#include <vector>

#include "spore/error.h"

namespace spore {

namespace {
std::array<std::unique_ptr<Backend>, kMaxBackends>& table() {
  static std::array<std::unique_ptr<Backend>, kMaxBackends> t;
  return t;
}
std::mutex& table_mutex() {
  static std::mutex m;
  return m;
}
}  // namespace

// ---- registration hooks (NOTE [Backend registration]) ---------------------------------------
namespace {
struct Hooks {
  std::mutex mu;
  std::vector<std::pair<BackendRegistrar::Hook, BackendRegistrar::Hook>> list;
  bool installed = false;  // the install hooks have run
  bool kernels = false;    // the kernel hooks have run
};
Hooks& hooks() {
  static Hooks* h = new Hooks();  // leaked on purpose: registrars may run during static init
  return *h;
}
// Set while the install hooks run, so a hook that calls register_backend does not wait for itself.
thread_local bool t_installing = false;
// Every tensor allocation looks its backend up: after the first, the check is one load.
std::atomic<bool> g_installed{false};

void install_backends() {
  static std::mutex install_mu;
  std::lock_guard<std::mutex> lock(install_mu);
  if (g_installed.load(std::memory_order_acquire)) return;
  std::vector<BackendRegistrar::Hook> run;
  {
    std::lock_guard<std::mutex> hooks_lock(hooks().mu);
    hooks().installed = true;
    for (auto& [install, kernels] : hooks().list)
      if (install) run.push_back(install);
  }
  t_installing = true;
  try {
    for (auto fn : run) fn();
  } catch (...) {
    t_installing = false;
    throw;
  }
  t_installing = false;
  g_installed.store(true, std::memory_order_release);
}

inline void ensure_backends() {
  if (!g_installed.load(std::memory_order_acquire) && !t_installing) install_backends();
}
}  // namespace

BackendRegistrar::BackendRegistrar(Hook install, Hook kernels) {
  bool late_install, late_kernels;
  {
    std::lock_guard<std::mutex> lock(hooks().mu);
    hooks().list.emplace_back(install, kernels);
    late_install = hooks().installed;
    late_kernels = hooks().kernels;
  }
  if (late_install && install) install();
  if (late_kernels && kernels) kernels();
}

void run_backend_kernel_hooks() {
  ensure_backends();
  std::vector<BackendRegistrar::Hook> run;
  {
    std::lock_guard<std::mutex> lock(hooks().mu);
    hooks().kernels = true;
    for (auto& [install, kernels] : hooks().list)
      if (kernels) run.push_back(kernels);
  }
  for (auto fn : run) fn();
}

void register_backend_at(int id, std::unique_ptr<Backend> b) {
  std::lock_guard<std::mutex> lock(table_mutex());
  if (id < 0 || id >= kMaxBackends || table()[id])
    throw Error(ErrorCode::kInternal, "backend slot " + std::to_string(id) + " is taken or invalid");
  table()[id] = std::move(b);
}

int register_backend(std::unique_ptr<Backend> b) {
  ensure_backends();
  std::lock_guard<std::mutex> lock(table_mutex());
  for (int id = kCudaBackend + 1; id < kMaxBackends; ++id) {
    if (!table()[id]) {
      table()[id] = std::move(b);
      return id;
    }
  }
  throw Error(ErrorCode::kDevice, "no free backend slot (at most " + std::to_string(kMaxBackends) + ")");
}

bool backend_registered(int id) {
  ensure_backends();
  return id >= 0 && id < kMaxBackends && table()[id] != nullptr;
}

Backend& backend(int id) {
  if (!backend_registered(id))
    throw Error(ErrorCode::kDevice, "no backend is registered with id " + std::to_string(id) +
                                        (id == kCudaBackend ? " (this build has no CUDA backend)" : ""));
  return *table()[id];
}

int find_backend(std::string_view name) {
  ensure_backends();
  for (int id = 0; id < kMaxBackends; ++id)
    if (table()[id] && name == table()[id]->name()) return id;
  return -1;
}

std::vector<std::string> backend_names() {
  ensure_backends();
  std::vector<std::string> out;
  for (auto& b : table())
    if (b) out.emplace_back(b->name());
  return out;
}

Device Device::parse(std::string_view text) {
  std::string_view name = text;
  int index = 0;
  if (auto colon = text.find(':'); colon != std::string_view::npos) {
    name = text.substr(0, colon);
    std::string_view num = text.substr(colon + 1);
    if (num.empty() || num.size() > 4 || num.find_first_not_of("0123456789") != std::string_view::npos)
      throw Error(ErrorCode::kDevice, "bad device '" + std::string(text) + "': expected NAME or NAME:INDEX");
    index = std::stoi(std::string(num));
  }
  int id = find_backend(name);
  if (id < 0) {
    std::string have;
    for (auto& n : backend_names()) have += (have.empty() ? "" : ", ") + n;
    std::string hint = name == "cuda" ? " (this build of Spore was compiled without CUDA)" : "";
    throw Error(ErrorCode::kDevice, "unknown device '" + std::string(text) + "'" + hint +
                                        "; this build has: " + have);
  }
  int count = spore::backend(id).device_count();
  if (index >= count)
    throw Error(ErrorCode::kDevice, "device '" + std::string(text) + "' does not exist: backend '" +
                                        std::string(name) + "' has " + std::to_string(count) + " device(s)");
  return Device{(uint8_t)id, (int16_t)index};
}

std::string Device::str() const {
  std::string n = backend_registered(this->backend) ? spore::backend(this->backend).name()
                                                    : "backend" + std::to_string(this->backend);
  if (this->backend == kCpuBackend) return n;
  return n + ":" + std::to_string(index);
}

}  // namespace spore
