// Probe registry, ProbeContext and the evidence rule (NOTE [Evidence rule]).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include "probe/json_read.h"
#include "spore/error.h"
#include "spore/probe/env.h"
#include "spore/probe/probe.h"

namespace spore::probe {

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kObservedPass: return "observed-pass";
    case Verdict::kObservedFail: return "observed-fail";
    case Verdict::kBlocked: return "blocked";
    case Verdict::kNotRun: return "not-run";
  }
  return "not-run";
}

Verdict verdict_from_name(std::string_view name) {
  for (Verdict v : {Verdict::kObservedPass, Verdict::kObservedFail, Verdict::kBlocked, Verdict::kNotRun})
    if (name == verdict_name(v)) return v;
  throw Error(ErrorCode::kValue, "unknown verdict '" + std::string(name) +
                                     "'; expected observed-pass, observed-fail, blocked or not-run");
}

// ---- registry ---------------------------------------------------------------------------------
namespace {
struct Registry {
  std::mutex mu;
  std::map<std::string, ProbeSpec, std::less<>> probes;
};
Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: static registrations outlive main
  return *r;
}
}  // namespace

bool register_probe(ProbeSpec spec) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (spec.name.empty()) throw Error(ErrorCode::kValue, "register_probe: a probe needs a name");
  if (r.probes.count(spec.name))
    throw Error(ErrorCode::kValue, "register_probe: a probe named '" + spec.name + "' already exists");
  std::string name = spec.name;
  r.probes.emplace(std::move(name), std::move(spec));
  return true;
}

const ProbeSpec* find_probe(std::string_view name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.probes.find(name);
  return it == r.probes.end() ? nullptr : &it->second;
}

std::vector<const ProbeSpec*> all_probes(std::string_view group) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<const ProbeSpec*> out;
  for (const auto& [name, spec] : r.probes)
    if (group.empty() || spec.group == group) out.push_back(&spec);
  return out;
}

// ---- host copies ------------------------------------------------------------------------------
std::string artifact_dir() {
  namespace fs = std::filesystem;
  const char* env = std::getenv("SPORE_PROBE_OUT_DIR");
  fs::path dir = env && *env ? fs::path(env) : fs::temp_directory_path() / "spore-samples";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error(ErrorCode::kIO, "cannot create the artifact directory '" + dir.string() + "': " + ec.message());
  return dir.string();
}

std::vector<double> host_values(const Tensor& t) {
  Tensor h = t.device() == Device::cpu() ? t : t.to(Device::cpu());
  const int64_t n = h.numel();
  std::vector<double> out((size_t)n);
  if (n == 0) return out;
  const int nd = h.ndim();
  const char* base = static_cast<const char*>(h.data_ptr());
  std::vector<int64_t> idx((size_t)nd, 0);
  visit_dtype(h.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = reinterpret_cast<const T*>(base);
    for (int64_t i = 0; i < n; ++i) {
      int64_t off = 0;
      for (int d = 0; d < nd; ++d) off += idx[(size_t)d] * h.strides()[d];
      if constexpr (std::is_same_v<T, bool>) {
        out[(size_t)i] = reinterpret_cast<const uint8_t*>(p)[off] ? 1.0 : 0.0;
      } else {
        if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
          out[(size_t)i] = (double)(float)p[off];
        else
          out[(size_t)i] = (double)p[off];
      }
      for (int d = nd - 1; d >= 0; --d) {
        if (++idx[(size_t)d] < h.shape()[d]) break;
        idx[(size_t)d] = 0;
      }
    }
  });
  return out;
}

// ---- context ----------------------------------------------------------------------------------
namespace {
Json finite_or_null(double x) { return std::isfinite(x) ? Json(x) : Json(nullptr); }
Json values_json(const std::vector<double>& v, size_t limit = 64) {
  Json a = Json::array();
  for (size_t i = 0; i < v.size() && i < limit; ++i) a.push_back(finite_or_null(v[i]));
  return a;
}
}  // namespace

ProbeContext::ProbeContext(std::string probe_name, Device device, std::string device_text)
    : name_(std::move(probe_name)), device_(device), device_text_(std::move(device_text)) {
  result_["probe"] = name_;
  result_["device_requested"] = device_text_;
  result_["status"] = "ran";  // "blocked" or "failed" when the probe says so
  result_["reason"] = "";
  result_["comparisons"] = Json::array();
  result_["artifacts"] = Json::array();
  result_["shapes"] = Json::array();
  result_["values"] = Json::object();
}

bool ProbeContext::compare(const std::string& what, const Tensor& got,
                           const std::vector<double>& reference, double atol, double rtol) {
  std::vector<double> values = host_values(got);  // the copy-out: the proof a result exists
  bool ok = compare_values(what, values, reference, atol, rtol, got.device().str());
  Json& c = result_["comparisons"].back();
  c["dtype"] = dtype_name(got.dtype());
  c["shape"] = got.shape().to_vector();
  return ok;
}

bool ProbeContext::compare_values(const std::string& what, const std::vector<double>& got,
                                  const std::vector<double>& reference, double atol, double rtol,
                                  const std::string& ran_on) {
  Json c;
  c["what"] = what;
  c["device"] = ran_on;
  c["count"] = got.size();
  c["values"] = values_json(got);
  c["reference"] = values_json(reference);
  c["atol"] = atol;
  c["rtol"] = rtol;
  bool ok = got.size() == reference.size() && !got.empty();
  double max_abs = 0;
  int64_t bad = 0;
  if (got.size() == reference.size()) {
    for (size_t i = 0; i < got.size(); ++i) {
      double g = got[i], r = reference[i];
      bool same = (std::isnan(g) && std::isnan(r)) || g == r;
      double d = same ? 0.0 : std::abs(g - r);
      if (std::isnan(d)) d = INFINITY;
      max_abs = std::max(max_abs, d);
      if (!same && !(d <= atol + rtol * std::abs(r))) ++bad;
    }
  } else {
    c["error"] = "got " + std::to_string(got.size()) + " values, reference has " +
                 std::to_string(reference.size());
    max_abs = INFINITY;
  }
  if (bad) ok = false;
  c["max_abs_diff"] = finite_or_null(max_abs);
  c["mismatches"] = bad;
  c["within_tolerance"] = ok;
  result_["comparisons"].push_back(c);
  return ok;
}

void ProbeContext::artifact(const std::string& name, const std::string& path,
                            const std::string& revision) {
  Json a;
  a["name"] = name;
  a["path"] = path;
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw Error(ErrorCode::kIO, "probe artifact '" + name + "': cannot open " + path);
  a["bytes"] = (int64_t)in.tellg();
  a["sha256"] = sha256_file(path);
  a["revision"] = revision;
  a["alignment"] = nullptr;
  result_["artifacts"].push_back(a);
}

void ProbeContext::alignment(const std::string& artifact_name, double max_abs_error, double tolerance) {
  for (Json& a : result_["artifacts"]) {
    if (a["name"] != artifact_name) continue;
    a["alignment"] = Json{{"max_abs_error", finite_or_null(max_abs_error)},
                          {"tolerance", tolerance},
                          {"within_tolerance", max_abs_error <= tolerance}};
    return;
  }
  throw Error(ErrorCode::kValue, "probe alignment: no artifact named '" + artifact_name +
                                     "' was recorded; call artifact() first");
}

void ProbeContext::shape(const std::string& what, const Shape& s) {
  result_["shapes"].push_back(Json{{"what", what}, {"shape", s.to_vector()}});
}

void ProbeContext::value(const std::string& key, Json v) { result_["values"][key] = std::move(v); }

void ProbeContext::block(const std::string& reason) {
  result_["status"] = "blocked";
  result_["reason"] = reason;
  throw ProbeStop{Verdict::kBlocked, reason};
}

void ProbeContext::fail(const std::string& reason) {
  result_["status"] = "failed";
  result_["reason"] = reason;
  throw ProbeStop{Verdict::kObservedFail, reason};
}

void ProbeContext::not_run(const std::string& reason) {
  result_["status"] = "not-run";
  result_["reason"] = reason;
  throw ProbeStop{Verdict::kNotRun, reason};
}

// ---- the rule ---------------------------------------------------------------------------------
Verdict judge(const Json& r, std::string* reason) {
  auto set = [&](Verdict v, std::string why) {
    if (reason) *reason = std::move(why);
    return v;
  };
  if (!r.is_object()) return set(Verdict::kObservedFail, "malformed result: not a JSON object");
  auto str = [&](const char* k) {
    return r.contains(k) && r[k].is_string() ? r[k].get<std::string>() : std::string();
  };
  const std::string status = str("status");
  if (status == "blocked") return set(Verdict::kBlocked, str("reason"));
  if (status == "failed") return set(Verdict::kObservedFail, str("reason"));
  if (status == "not-run") return set(Verdict::kNotRun, str("reason"));
  if (status != "ran") return set(Verdict::kObservedFail, "malformed result: unknown status '" + status + "'");

  const std::string want = str("device_requested");
  int evidence = 0;
  if (r.contains("comparisons") && r["comparisons"].is_array()) {
    for (const Json& c : r["comparisons"]) {
      if (!c.is_object()) return set(Verdict::kObservedFail, "malformed comparison");
      std::string what = detail::string_or(detail::field(c, "what"), "?");
      std::string dev = c.contains("device") && c["device"].is_string() ? c["device"].get<std::string>() : "";
      if (!want.empty() && dev != want)
        return set(Verdict::kObservedFail,
                   "'" + what + "' ran on " + (dev.empty() ? std::string("an unnamed device") : dev) +
                       ", not on the requested " + want +
                       ": a result from another device never stands in for this one");
      bool has_diff = c.contains("max_abs_diff") && c["max_abs_diff"].is_number();
      bool has_values = c.contains("count") && c["count"].is_number() && c["count"].get<double>() > 0;
      bool within = c.contains("within_tolerance") && c["within_tolerance"].is_boolean() &&
                    c["within_tolerance"].get<bool>();
      if (!within || !has_diff) {
        std::string d = has_diff ? std::to_string(c["max_abs_diff"].get<double>()) : "not finite";
        return set(Verdict::kObservedFail, "'" + what + "' differs from its reference: max abs diff " +
                                               d + (c.contains("error") ? " (" + detail::string_or(c["error"], c["error"].dump()) + ")" : ""));
      }
      if (has_values) ++evidence;
    }
  }
  if (r.contains("artifacts") && r["artifacts"].is_array()) {
    for (const Json& a : r["artifacts"]) {
      if (!a.is_object()) return set(Verdict::kObservedFail, "malformed artifact");
      std::string name = detail::string_or(detail::field(a, "name"), "?");
      bool has_hash = a.contains("sha256") && a["sha256"].is_string() && a["sha256"].get<std::string>().size() == 64;
      const Json* al = a.contains("alignment") && a["alignment"].is_object() ? &a["alignment"] : nullptr;
      if (!has_hash || !al) continue;  // an artifact without both is context, not evidence
      if (!detail::is_true(detail::field(*al, "within_tolerance")))
        return set(Verdict::kObservedFail, "artifact '" + name + "' does not align: max abs error " +
                                               detail::field(*al, "max_abs_error").dump());
      ++evidence;
    }
  }
  if (evidence == 0) {
    bool shapes = r.contains("shapes") && r["shapes"].is_array() && !r["shapes"].empty();
    return set(Verdict::kObservedFail,
               std::string(shapes ? "refused as evidence: only shapes were checked" : "no evidence recorded") +
                   "; a pass needs retrieved values compared with a reference (difference recorded) "
                   "or artifact hashes with an alignment figure");
  }
  return set(Verdict::kObservedPass, std::to_string(evidence) + " piece(s) of evidence within tolerance");
}

}  // namespace spore::probe
