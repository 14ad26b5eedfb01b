// Probes: named checks whose verdicts must rest on evidence (NOTE [Evidence rule]).
//
// NOTE [Evidence rule]
// The chapter's discipline (sections 5.2, 5.12): a claim about a device is worth only the
// numbers retrieved for it. A probe never states "pass" itself. It hands over evidence through
// ProbeContext, and judge() derives the verdict from that evidence:
//   * observed-pass needs at least one comparison of values copied back to the host against a
//     reference, with the difference recorded and within its tolerance, or an artifact hash
//     (SHA-256) with an alignment figure; every compared result must come from the requested
//     device (a CPU result never stands in for an accelerator);
//   * shapes are recorded but are never evidence: a probe that only looked at shapes fails;
//   * blocked means a prerequisite is missing (no device, no artifact, a part not built yet);
//     it is never called "unsupported";
//   * not-run is for checks that were never attempted.
// The parent process judges the child's JSON again, so a child that claims a pass without
// evidence (or prints garbage) cannot produce one.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "spore/device.h"
#include "spore/shape.h"
#include "spore/tensor.h"

namespace spore::probe {

using Json = nlohmann::ordered_json;

enum class Verdict { kObservedPass, kObservedFail, kBlocked, kNotRun };
const char* verdict_name(Verdict v);  // "observed-pass", ...
Verdict verdict_from_name(std::string_view name);  // throws kValue

class ProbeContext;
using ProbeFn = std::function<void(ProbeContext&)>;

struct ProbeSpec {
  std::string name;
  std::string group;        // "sample", "builtin", "test", ...
  std::string description;  // one line
  // Backend the probe must run on ("cuda"), empty when it runs on whatever --device names.
  // A missing backend or device makes the probe blocked, judged inside the child.
  std::string needs_backend;
  ProbeFn run;
};

// The process-wide probe table. Registration is usually static (SPORE_REGISTER_PROBE).
bool register_probe(ProbeSpec spec);  // throws kValue on a duplicate name
const ProbeSpec* find_probe(std::string_view name);
std::vector<const ProbeSpec*> all_probes(std::string_view group = {});  // sorted by name

#define SPORE_PROBE_CONCAT2(a, b) a##b
#define SPORE_PROBE_CONCAT(a, b) SPORE_PROBE_CONCAT2(a, b)
// SPORE_REGISTER_PROBE({"name", "group", "description", "", &fn});
#define SPORE_REGISTER_PROBE(...)                                                     \
  [[maybe_unused]] static const bool SPORE_PROBE_CONCAT(spore_probe_registered_, __LINE__) = \
      ::spore::probe::register_probe(::spore::probe::ProbeSpec __VA_ARGS__)

// Thrown by ProbeContext::block/fail to end a probe early; the child runner catches it.
struct ProbeStop {
  Verdict verdict;
  std::string reason;
};

// What a probe hands over. Everything it records ends up in its report.
class ProbeContext {
 public:
  ProbeContext(std::string probe_name, Device device, std::string device_text);

  const std::string& probe_name() const { return name_; }
  Device device() const { return device_; }            // where results must come from
  const std::string& device_text() const { return device_text_; }

  // Evidence: copies `got` back to the host (the one proof a result exists), records its values,
  // the reference, max |got - ref| and the device the result came from. Returns whether
  // every element is within atol + rtol * |ref|.
  bool compare(const std::string& what, const Tensor& got, const std::vector<double>& reference,
               double atol, double rtol = 0);
  // The same for values retrieved by other means (e.g. a Lite runtime), naming the device.
  bool compare_values(const std::string& what, const std::vector<double>& got,
                      const std::vector<double>& reference, double atol, double rtol,
                      const std::string& ran_on);
  // Evidence: a file's name, bytes and SHA-256 (and revision when pinned).
  void artifact(const std::string& name, const std::string& path, const std::string& revision = "");
  // Evidence (with an artifact): how well what was reloaded from it matches the original.
  void alignment(const std::string& artifact_name, double max_abs_error, double tolerance = 0);
  // Recorded, never evidence (NOTE [Evidence rule]).
  void shape(const std::string& what, const Shape& shape);
  // Figures worth keeping (loss, latency, throughput, versions): not evidence on their own.
  void value(const std::string& key, Json v);

  [[noreturn]] void block(const std::string& reason);  // a prerequisite is missing
  [[noreturn]] void fail(const std::string& reason);   // observed a failure
  [[noreturn]] void not_run(const std::string& reason);  // the check was never attempted

  // The raw result (before judgement): what the child sends to the parent.
  const Json& result() const { return result_; }
  Json& mutable_result() { return result_; }

 private:
  std::string name_;
  Device device_;
  std::string device_text_;
  Json result_;
};

// Applies NOTE [Evidence rule] to a child's result and returns the verdict and why.
// Used by the child and, again, by the parent on what it received.
Verdict judge(const Json& result, std::string* reason);

// Host copy of any tensor as float64, read through its strides without running an op.
std::vector<double> host_values(const Tensor& t);

// Where a probe writes the artifacts it records (checkpoints, IR files): the run's report
// directory, which run_probes hands to its children in SPORE_PROBE_OUT_DIR, or
// <temp>/spore-samples for a probe run outside the harness. Created if missing.
std::string artifact_dir();

}  // namespace spore::probe
