// Backend registry and device names (NOTE [Backends] in include/spore/backend.h).
#include "spore/backend.h"

#include <array>
#include <mutex>

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

void register_cpu_backend();  // src/backends/cpu/cpu_backend.cc

namespace {
void ensure_cpu() {
  static bool once = (register_cpu_backend(), true);
  (void)once;
}
}  // namespace

void register_backend_at(int id, std::unique_ptr<Backend> b) {
  std::lock_guard<std::mutex> lock(table_mutex());
  if (id < 0 || id >= kMaxBackends || table()[id])
    throw Error(ErrorCode::kInternal, "backend slot " + std::to_string(id) + " is taken or invalid");
  table()[id] = std::move(b);
}

int register_backend(std::unique_ptr<Backend> b) {
  ensure_cpu();
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
  if (id == kCpuBackend) ensure_cpu();
  return id >= 0 && id < kMaxBackends && table()[id] != nullptr;
}

Backend& backend(int id) {
  if (!backend_registered(id))
    throw Error(ErrorCode::kDevice, "no backend is registered with id " + std::to_string(id) +
                                        (id == kCudaBackend ? " (this build has no CUDA backend)" : ""));
  return *table()[id];
}

int find_backend(std::string_view name) {
  ensure_cpu();
  for (int id = 0; id < kMaxBackends; ++id)
    if (table()[id] && name == table()[id]->name()) return id;
  return -1;
}

std::vector<std::string> backend_names() {
  ensure_cpu();
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
