// The environment report (`spore env`, issue 2 item 8).
#include "spore/probe/env.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <climits>
#include <fstream>
#include <sstream>
#include <thread>

#include <oneapi/dnnl/dnnl.h>

#include "probe/json_read.h"
#include "spore/backend.h"
#include "spore/cpu_info.h"
#include "spore/op_list.h"

#ifndef SPORE_VERSION
#define SPORE_VERSION "unknown"
#endif
#ifndef SPORE_GIT_COMMIT
#define SPORE_GIT_COMMIT "unknown"
#endif
#ifndef SPORE_BUILD_TYPE
#define SPORE_BUILD_TYPE "unknown"
#endif
#ifndef SPORE_CXX_FLAGS
#define SPORE_CXX_FLAGS ""
#endif
#ifndef SPORE_SANITIZE
#define SPORE_SANITIZE 0
#endif

namespace spore::probe {

std::string spore_version() { return SPORE_VERSION; }
std::string spore_git_commit() { return SPORE_GIT_COMMIT; }
std::string spore_build_type() { return SPORE_BUILD_TYPE; }

namespace {

std::string self_exe() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, (size_t)n) : std::string("unknown");
}

std::string trim(std::string s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// /proc/meminfo values are in kB.
Json memory_info() {
  Json m = Json::object();
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    if (key != "MemTotal" && key != "MemAvailable") continue;
    long long kb = std::atoll(line.c_str() + colon + 1);
    m[key == "MemTotal" ? "total_bytes" : "available_bytes"] = kb * 1024;
  }
  if (!m.contains("total_bytes")) m["total_bytes"] = 0;
  if (!m.contains("available_bytes")) m["available_bytes"] = 0;
  return m;
}

// The model string from /proc/cpuinfo, for CPUs whose cpuid brand string is empty.
std::string cpuinfo_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return trim(line.substr(line.find(':') + 1));
  return "";
}

int affinity_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  return CPU_COUNT(&set);
}

std::string cxx_standard_name(long v) {
  if (v >= 202302L) return "C++23";
  if (v >= 202002L) return "C++20";
  if (v >= 201703L) return "C++17";
  return "C++" + std::to_string(v);
}

const char* kEnvPrefixes[] = {"SPORE_", "OMP_", "DNNL_", "ONEDNN_", "CUDA_", "NVIDIA_",
                              "LD_LIBRARY_PATH", "LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS",
                              "HOME", "USER", "PATH"};
}  // namespace

std::vector<std::string> loaded_libraries() {
  std::vector<std::string> out;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* v = static_cast<std::vector<std::string>*>(data);
        const char* name = info->dlpi_name;
        // The first entry is the program itself, with an empty name.
        v->push_back(name && *name ? std::string(name) : (v->empty() ? self_exe() : "(unnamed)"));
        return 0;
      },
      &out);
  // Resolve symlinks so that two copies of a library show as two different files.
  for (auto& p : out) {
    if (p.empty() || p[0] != '/') continue;
    char buf[PATH_MAX];
    if (realpath(p.c_str(), buf) && p != buf) p = p + " -> " + buf;
  }
  return out;
}

Json command_record(const std::vector<std::string>& argv) {
  Json c;
  c["argv"] = argv;
  char buf[PATH_MAX];
  c["cwd"] = getcwd(buf, sizeof buf) ? std::string(buf) : std::string("unknown");
  Json env = Json::object();
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    std::string key = kv.substr(0, eq);
    for (const char* p : kEnvPrefixes) {
      std::string_view pre(p);
      bool match = pre.back() == '_' ? key.rfind(pre, 0) == 0 : key == pre;
      if (match) {
        env[key] = kv.substr(eq + 1);
        break;
      }
    }
  }
  c["env"] = env;
  return c;
}

Json collect_env(const std::vector<std::string>& command) {
  Json r;
  r["schema"] = "spore.env-report/1";
  r["kind"] = "env";
  r["created_at"] = utc_now_iso8601();

  Json b;
  b["path"] = self_exe();
  b["spore_version"] = spore_version();
  b["git_commit"] = spore_git_commit();
  b["build_type"] = spore_build_type();
  b["compiler"] = std::string(
#if defined(__clang__)
      "clang "
#elif defined(__GNUC__)
      "gcc "
#endif
      __VERSION__);
  b["cxx_standard"] = cxx_standard_name(__cplusplus);
  b["cplusplus"] = (long long)__cplusplus;
  b["cxx_flags"] = trim(SPORE_CXX_FLAGS);
  b["sanitize"] = SPORE_SANITIZE ? true : false;
  b["op_set_version"] = kOpSetVersion;
  b["num_ops"] = kNumOps;
  r["binary"] = b;

  const CpuInfo f = cpu_info();
  Json c;
  c["vendor"] = f.vendor;
  c["model"] = !f.model.empty() ? f.model : cpuinfo_model();
  c["features"] = f.features;
  c["simd_level"] = f.simd_level;
  c["best_simd_level"] = f.best_simd_level;
  c["logical_cores"] = (int)std::thread::hardware_concurrency();
  c["usable_cores"] = affinity_cores();
  r["cpu"] = c;
  r["memory"] = memory_info();

  const dnnl_version_t* v = dnnl_version();
  Json blas;
  blas["name"] = "oneDNN";
  blas["version"] = std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                    std::to_string(v->patch);
  blas["commit"] = v->hash ? std::string(v->hash) : std::string();
  std::vector<std::string> libs = loaded_libraries();
  std::string dnnl_path;
  for (const auto& p : libs)
    if (p.find("libdnnl") != std::string::npos) dnnl_path = p;
  blas["path"] = dnnl_path.empty() ? std::string("(linked statically or not loaded)") : dnnl_path;
  r["blas"] = blas;

  // NOTE [Device probing]: this build has no CUDA backend. When one is compiled in, its driver
  // and runtime versions and devices are read by the probe "cuda_devices" in a child process
  // with a timeout (NOTE [Probe isolation]) and merged here; the parent never opens a device.
  Json cuda;
  bool cuda_compiled = find_backend("cuda") >= 0;
  cuda["compiled"] = cuda_compiled;
  cuda["status"] = cuda_compiled ? "compiled; devices are probed in a child process"
                                 : "not compiled";
  cuda["driver_version"] = nullptr;
  cuda["runtime_version"] = nullptr;
  cuda["devices"] = Json::array();
  r["cuda"] = cuda;
  r["backends"] = backend_names();
  r["shared_libraries"] = libs;
  r["command"] = command_record(command);
  r["paths"] = Json{{"report", nullptr}};
  return r;
}

Json env_summary(const Json& env) {
  using detail::field;
  Json s;
  s["spore_version"] = field(env, "binary", "spore_version");
  s["git_commit"] = field(env, "binary", "git_commit");
  s["build_type"] = field(env, "binary", "build_type");
  s["compiler"] = field(env, "binary", "compiler");
  s["binary"] = field(env, "binary", "path");
  s["cpu_model"] = field(env, "cpu", "model");
  s["simd_level"] = field(env, "cpu", "simd_level");
  s["cores"] = field(env, "cpu", "usable_cores");
  s["memory_bytes"] = field(env, "memory", "total_bytes");
  s["blas"] = detail::string_or(field(env, "blas", "name")) + " " +
              detail::string_or(field(env, "blas", "version"));
  s["blas_path"] = field(env, "blas", "path");
  s["cuda"] = field(env, "cuda", "status");
  s["gpu"] = field(env, "cuda", "devices");
  s["shared_libraries"] = field(env, "shared_libraries");
  return s;
}

// NOTE [Hostile JSON]: `spore report show` passes files from outside here; every read is checked.
std::string format_env(const Json& env) {
  using detail::elements;
  using detail::field;
  std::ostringstream o;
  auto row = [&](const std::string& k, const std::string& v) {
    o << "  " << k << std::string(k.size() < 18 ? 18 - k.size() : 1, ' ') << v << "\n";
  };
  auto str = [](const Json& j) { return j.is_string() ? j.get<std::string>() : j.dump(); };
  const Json& b = field(env, "binary");
  o << "Spore environment (" << str(field(env, "created_at")) << ")\n";
  row("binary", str(field(b, "path")));
  row("version", str(field(b, "spore_version")) + " (commit " + str(field(b, "git_commit")) + ", " +
                     str(field(b, "build_type")) + (detail::is_true(field(b, "sanitize")) ? ", sanitizers" : "") + ")");
  row("compiler", str(field(b, "compiler")) + ", " + str(field(b, "cxx_standard")));
  const std::string flags = str(field(b, "cxx_flags"));
  row("flags", flags.empty() ? "(none)" : flags);
  row("op set", "version " + str(field(b, "op_set_version")) + ", " + str(field(b, "num_ops")) + " ops");
  const Json& c = field(env, "cpu");
  row("cpu", str(field(c, "model")) + " (" + str(field(c, "vendor")) + ")");
  row("cores", str(field(c, "usable_cores")) + " usable of " + str(field(c, "logical_cores")) + " logical");
  std::string feats;
  for (const auto& x : elements(field(c, "features"))) {
    if (!feats.empty()) feats += ' ';
    feats += str(x);
  }
  row("cpu features", feats);
  row("simd level", str(field(c, "simd_level")) + " (best " + str(field(c, "best_simd_level")) + ")");
  auto gib = [](const Json& j) {
    if (!j.is_number()) return std::string("?");
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GiB", j.get<double>() / (1024.0 * 1024 * 1024));
    return std::string(buf);
  };
  row("memory", gib(field(env, "memory", "total_bytes")) + " total, " +
                    gib(field(env, "memory", "available_bytes")) + " available");
  row("blas", str(field(env, "blas", "name")) + " " + str(field(env, "blas", "version")) + " at " +
                  str(field(env, "blas", "path")));
  row("cuda", str(field(env, "cuda", "status")));
  std::string be;
  for (const auto& x : elements(field(env, "backends"))) {
    if (!be.empty()) be += ", ";
    be += str(x);
  }
  row("backends", be);
  const Json& libs = elements(field(env, "shared_libraries"));
  o << "  shared libraries actually loaded (" << libs.size() << "):\n";
  for (const auto& p : libs) o << "    " << str(p) << "\n";
  if (field(env, "paths", "report").is_string()) row("report", str(field(env, "paths", "report")));
  return o.str();
}

}  // namespace spore::probe
