// The child side of NOTE [Probe isolation]: run one probe, judge it, write the JSON to fd 3.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

#include "spore/backend.h"
#include "spore/context.h"
#include "spore/error.h"
#include "spore/probe/runner.h"

namespace spore::probe {

namespace {
void write_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the parent is gone; nothing more to do
    off += (size_t)n;
  }
}

// Checks the device prerequisite; fills `why` and returns false when it is missing.
bool device_available(const std::string& text, Device* out, std::string* why) {
  std::string name = text.substr(0, text.find(':'));
  if (find_backend(name) < 0) {
    std::string have;
    for (const auto& n : backend_names()) have += (have.empty() ? "" : ", ") + n;
    *why = name == "cuda" ? "this build was not compiled with CUDA (backends: " + have + ")"
                          : "this build has no backend '" + name + "' (backends: " + have + ")";
    return false;
  }
  try {
    *out = Device::parse(text);
  } catch (const Error& e) {
    *why = e.what();
    return false;
  }
  int count = backend(out->backend).device_count();
  if (out->index >= count) {
    *why = "no device " + out->str() + ": the " + name + " backend sees " + std::to_string(count) + " device(s)";
    return false;
  }
  return true;
}
}  // namespace

std::string canonical_device_text(const std::string& text) {
  auto colon = text.find(':');
  std::string name = text.substr(0, colon);
  std::string index = colon == std::string::npos ? "0" : text.substr(colon + 1);
  bool ok = !name.empty() && name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos &&
            !index.empty() && index.size() <= 4 && index.find_first_not_of("0123456789") == std::string::npos;
  if (!ok) throw Error(ErrorCode::kValue, "bad device '" + text + "': expected NAME or NAME:INDEX (cpu, cuda:0)");
  if (name == "cpu" && index == "0") return "cpu";
  return name + ":" + std::to_string(std::stoi(index));
}

std::string probe_device(const ProbeSpec& spec, const std::string& requested) {
  std::string r = canonical_device_text(requested);
  if (spec.needs_backend.empty() || r.rfind(spec.needs_backend, 0) == 0) return r;
  return canonical_device_text(spec.needs_backend);
}

int child_main(const std::string& name, const std::string& device, int result_fd) {
  auto start = std::chrono::steady_clock::now();
  Json out;
  const ProbeSpec* spec = find_probe(name);
  if (!spec) {
    out = Json{{"probe", name}, {"device_requested", device}, {"status", "failed"},
               {"reason", "unknown probe '" + name + "' in this binary"}};
  } else {
    std::string dev_text, why;
    Device dev;
    bool ok = false;
    try {
      dev_text = probe_device(*spec, device);
      ok = device_available(dev_text, &dev, &why);
    } catch (const Error& e) {
      dev_text = device;
      why = e.what();
    }
    if (!ok) {
      out = Json{{"probe", name}, {"device_requested", dev_text}, {"status", "blocked"}, {"reason", why},
                 {"comparisons", Json::array()}, {"artifacts", Json::array()}, {"shapes", Json::array()},
                 {"values", Json::object()}};
    } else {
      dev_text = dev.str();  // canonical spelling, as tensors name their device
      ProbeContext ctx(name, dev, dev_text);
      try {
        set_device(dev);
        spec->run(ctx);
      } catch (const ProbeStop&) {
        // status and reason are already set
      } catch (const Error& e) {
        ctx.mutable_result()["status"] = "failed";
        ctx.mutable_result()["reason"] = std::string(error_code_name(e.code())) + ": " + e.what();
      } catch (const std::exception& e) {
        ctx.mutable_result()["status"] = "failed";
        ctx.mutable_result()["reason"] = std::string("exception: ") + e.what();
      }
      out = ctx.result();
    }
  }
  std::string reason;
  Verdict v = judge(out, &reason);
  out["verdict"] = verdict_name(v);  // advisory: the parent judges again
  out["verdict_reason"] = reason;
  out["duration_ms"] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  write_all(result_fd, out.dump());
  close(result_fd);
  return 0;
}

int child_main_from_args(int argc, char** argv) {
  std::string name, device = "cpu";
  int fd = kResultFd;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--device" && i + 1 < argc) device = argv[++i];
    else if (a == "--result-fd" && i + 1 < argc) fd = std::atoi(argv[++i]);
    else if (name.empty() && !a.empty() && a[0] != '-') name = a;
    else {
      std::fprintf(stderr, "usage: %s NAME --device D --result-fd N (internal)\n", kChildCommand);
      return 2;
    }
  }
  if (name.empty()) {
    std::fprintf(stderr, "usage: %s NAME --device D --result-fd N (internal)\n", kChildCommand);
    return 2;
  }
  return child_main(name, device, fd);
}

int child_main_from_env() {
  const char* name = std::getenv("SPORE_PROBE_CHILD_NAME");
  if (!name || !*name) return -1;
  const char* dev = std::getenv("SPORE_PROBE_CHILD_DEVICE");
  return child_main(name, dev && *dev ? dev : "cpu", kResultFd);
}

}  // namespace spore::probe
