// The op capability matrix (spore probe ops): one child per op, one cell per dtype.
#include "spore/probe/op_matrix.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "spore/context.h"
#include "spore/error.h"
#include "spore/op_list.h"
#include "spore/op_registry.h"
#include "spore/probe/env.h"
#include "op_matrix_factories.h"
#include "probe/json_read.h"
#include "spore/probe/report.h"

namespace spore::probe {

std::vector<std::string> op_names() {
  return {
#define SPORE_PROBE_OP_NAME(name) #name,
      SPORE_OP_LIST(SPORE_PROBE_OP_NAME)
#undef SPORE_PROBE_OP_NAME
  };
}

namespace {
// What a value becomes when stored in `t` (the reference is computed in float64).
double as_dtype(double x, DType t) {
  if (std::isnan(x)) return x;
  switch (t) {
    case DType::kBool: return x != 0 ? 1 : 0;
    case DType::kInt8: return (double)(int8_t)(uint8_t)(int64_t)std::trunc(x);  // wraps like the kernels
    case DType::kUInt8: return (double)(uint8_t)(int64_t)std::trunc(x);
    case DType::kInt32: return (double)(int32_t)(uint32_t)(int64_t)std::trunc(x);
    case DType::kInt64: return std::trunc(x);
    case DType::kFloat16: return (float)Half((float)x);
    case DType::kBFloat16: return (float)BFloat16((float)x);
    case DType::kFloat32: return (float)x;
    case DType::kFloat64: return x;
  }
  return x;
}

// |got - ref| <= atol + rtol * |ref|, per output dtype; low precision computes through float32.
void tolerance_for(DType t, double* atol, double* rtol) {
  switch (t) {
    case DType::kFloat16: *atol = 1e-2, *rtol = 1e-2; return;
    case DType::kBFloat16: *atol = 5e-2, *rtol = 2e-2; return;
    case DType::kFloat32: *atol = 1e-5, *rtol = 1e-5; return;
    case DType::kFloat64: *atol = 1e-12, *rtol = 1e-12; return;
    default: *atol = 0, *rtol = 0; return;
  }
}

Json run_cell(const OpFactory& factory, DType t, Device dev, const std::string& dev_text) {
  Json cell;
  cell["dtype"] = dtype_name(t);
  cell["max_abs_err"] = nullptr;
  cell["out_dtype"] = nullptr;
  auto verdict = [&](Verdict v, std::string why) {
    cell["verdict"] = verdict_name(v);
    cell["reason"] = std::move(why);
    return cell;
  };
  std::optional<OpCase> oc;
  try {
    oc = factory(t);
  } catch (const std::exception& e) {
    return verdict(Verdict::kNotRun, std::string("could not build inputs: ") + e.what());
  }
  if (!oc) return verdict(Verdict::kNotRun, std::string("the input factory has no case for ") + dtype_name(t));

  std::vector<double> ref;
  Shape ref_shape;
  try {
    ContextGuard guard;
    set_device(Device::cpu());
    Tensor r = oc->run(oc->ref_inputs, true);
    ref = host_values(r);
    ref_shape = r.shape();
  } catch (const std::exception& e) {
    return verdict(Verdict::kNotRun, std::string("no float64 CPU reference: ") + e.what());
  }

  Tensor got;
  try {
    std::vector<Tensor> in;
    for (const Tensor& x : oc->inputs) in.push_back(x.to(dev));
    got = oc->run(in, false);
  } catch (const Error& e) {
    cell["error_code"] = error_code_name(e.code());
    return verdict(Verdict::kObservedFail, e.what());
  } catch (const std::exception& e) {
    return verdict(Verdict::kObservedFail, e.what());
  }
  cell["out_dtype"] = dtype_name(got.dtype());
  if (got.device().str() != dev_text)
    return verdict(Verdict::kObservedFail, "the result lives on " + got.device().str() + ", not on " + dev_text);
  if (got.shape() != ref_shape)
    return verdict(Verdict::kObservedFail, "shape " + got.shape().str() + " differs from the reference " + ref_shape.str());
  std::vector<double> g = host_values(got);  // the copy-out
  double atol, rtol;
  tolerance_for(got.dtype(), &atol, &rtol);
  double max_err = 0;
  int64_t bad = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    double r = oc->exact_reference ? ref[i] : as_dtype(ref[i], got.dtype());
    if ((std::isnan(r) && std::isnan(g[i])) || r == g[i]) continue;
    double d = std::abs(g[i] - r);
    if (std::isnan(d)) d = INFINITY;
    max_err = std::max(max_err, d);
    if (!(d <= atol + rtol * std::abs(r))) ++bad;
  }
  cell["max_abs_err"] = std::isfinite(max_err) ? Json(max_err) : Json(nullptr);
  cell["count"] = g.size();
  if (bad) return verdict(Verdict::kObservedFail, std::to_string(bad) + " of " + std::to_string(g.size()) +
                                                       " values outside tolerance");
  return verdict(Verdict::kObservedPass, "");
}
}  // namespace

void run_op_row(ProbeContext& ctx, const std::string& name) {
  // NOTE [Control flow]: an op with subgraphs (while_loop) has no kernel to sample; it runs
  // through spore::while_loop and the graph executor (tests/graph/while_loop_test.cc).
  if (const OpDef* def = find_op(name); def && def->num_subgraphs)
    ctx.not_run("op '" + name + "' carries subgraphs and has no kernel: it runs through spore::while_loop, "
                "eagerly or compiled by jit, not as one dispatched op");
  const OpFactory* factory = find_op_factory(name);
  if (!factory) ctx.not_run("no input factory for op '" + name + "' in the probe module (op_matrix_factories.cc)");
  Json cells = Json::array();
  int passed = 0;
  for (DType t : kAllDTypes) {
    Json cell = run_cell(*factory, t, ctx.device(), ctx.device_text());
    if (cell["verdict"] == "observed-pass") {
      ++passed;
      // Evidence for the row: the cell's error against the reference, from this device.
      ctx.compare_values(std::string(dtype_name(t)), {cell["max_abs_err"].is_null() ? 0.0 : cell["max_abs_err"].get<double>()},
                         {0.0}, 1e30, 0, ctx.device_text());
    }
    cells.push_back(cell);
  }
  ctx.value("cells", cells);
  if (!passed) ctx.fail("no dtype of '" + name + "' passed on " + ctx.device_text());
}

void register_op_probes() {
  for (const std::string& name : op_names()) {
    std::string probe = "op:" + name;
    if (find_probe(probe)) continue;
    register_probe({probe, "ops", "capability matrix row of op " + name, "",
                    [name](ProbeContext& ctx) { run_op_row(ctx, name); }});
  }
}

Json run_op_matrix(const RunOptions& opts_in, const std::vector<std::string>& command, std::string* written_path,
                   const std::vector<std::string>& only) {
  register_op_probes();
  std::vector<std::string> names = op_names();
  if (!only.empty()) {
    for (const auto& n : only)
      if (std::find(names.begin(), names.end(), n) == names.end())
        throw Error(ErrorCode::kValue, "probe ops: unknown op '" + n + "'");
    names = only;
  }
  RunOptions opts = opts_in;
  std::string device = canonical_device_text(opts.device);
  Json env = collect_env(command);
  opts.environment = env_summary(env);
  Json m;
  m["schema"] = "spore.op-matrix/1";
  m["kind"] = "op-matrix";
  m["device"] = device;
  m["created_at"] = utc_now_iso8601();
  m["reference"] = "the same op on the CPU in float64 (random ops: the CPU in the same dtype), "
                   "rounded to the result dtype";
  m["environment"] = opts.environment;
  m["artifacts"] = Json::array();
  m["command"] = command_record(command);
  Json dtypes = Json::array();
  for (DType t : kAllDTypes) dtypes.push_back(dtype_name(t));
  m["dtypes"] = dtypes;
  Json rows = Json::array();
  Json counts = {{"observed-pass", 0}, {"observed-fail", 0}, {"blocked", 0}, {"not-run", 0}};
  for (const std::string& name : names) {
    Json rep = run_probe_isolated("op:" + name, opts);
    Json row;
    row["op"] = name;
    row["verdict"] = rep["verdict"];
    row["reason"] = rep["reason"];
    row["exit_code"] = rep["results"]["process"]["exit_code"];
    row["duration_ms"] = rep["duration_ms"];
    const Json& vals = rep["results"]["values"];
    Json cells = Json::array();
    if (vals.contains("cells") && vals["cells"].is_array()) {
      cells = vals["cells"];
    } else {
      // The child never delivered cells (crash, timeout, blocked): every cell carries its fate.
      std::string v = rep["verdict"].get<std::string>();
      if (v == "observed-pass") v = "observed-fail";
      for (DType t : kAllDTypes)
        cells.push_back(Json{{"dtype", dtype_name(t)}, {"verdict", v}, {"reason", rep["reason"]},
                             {"max_abs_err", nullptr}, {"out_dtype", nullptr}});
    }
    // A child's cells are outside input too (NOTE [Hostile JSON]): a cell without a known verdict
    // counts as observed-fail rather than reaching undefined behaviour.
    for (const Json& c : cells) {
      std::string v = detail::string_or(detail::field(c, "verdict"), "observed-fail");
      if (!counts.contains(v)) v = "observed-fail";
      counts[v] = counts[v].get<int>() + 1;
    }
    row["cells"] = cells;
    rows.push_back(row);
  }
  m["rows"] = rows;
  m["counts"] = counts;
  std::string path;
  if (opts.write_reports) {
    std::string dir = opts.out_dir.empty() ? "outputs" : opts.out_dir;
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    std::string dev_safe = device;
    for (char& c : dev_safe)
      if (c == ':') c = '_';
    path = std::filesystem::absolute(dir).lexically_normal().string() + "/op-matrix-" + dev_safe + "-" +
           utc_stamp_for_file() + ".json";
  }
  m["paths"] = Json{{"report", path.empty() ? Json(nullptr) : Json(path)}};
  if (!path.empty()) write_json(path, m);
  if (written_path) *written_path = path;
  return m;
}

// NOTE [Hostile JSON]: `spore report show` passes files from outside here; every read is checked.
std::string format_op_matrix(const Json& m) {
  using detail::elements;
  using detail::field;
  using detail::string_or;
  std::ostringstream o;
  o << "op capability matrix on " << string_or(field(m, "device"), "-") << " ("
    << string_or(field(m, "created_at"), "-")
    << "); cell: max |err| against the float64 CPU reference, or the verdict\n";
  o << "  P = observed-pass  F = observed-fail  B = blocked  - = not-run\n";
  o << "  op                        ";
  for (const Json& d : elements(field(m, "dtypes"))) {
    std::string s = string_or(d, "?");
    o << s << std::string(s.size() < 10 ? 10 - s.size() : 1, ' ');
  }
  o << "\n";
  for (const Json& row : elements(field(m, "rows"))) {
    std::string op = string_or(field(row, "op"), "?");
    o << "  " << op << std::string(op.size() < 26 ? 26 - op.size() : 1, ' ');
    for (const Json& c : elements(field(row, "cells"))) {
      std::string v = string_or(field(c, "verdict"));
      std::string s;
      if (v == "observed-pass") {
        char buf[16];
        double e = detail::number_or(field(c, "max_abs_err"), 0);
        std::snprintf(buf, sizeof buf, e == 0 ? "P 0" : "P %.0e", e);
        s = buf;
      } else {
        s.assign(1, v == "observed-fail" ? 'F' : v == "blocked" ? 'B' : '-');
      }
      o << s << std::string(s.size() < 10 ? 10 - s.size() : 1, ' ');
    }
    o << "\n";
  }
  const Json& c = field(m, "counts");
  o << "  cells: " << field(c, "observed-pass") << " observed-pass, " << field(c, "observed-fail")
    << " observed-fail, " << field(c, "blocked") << " blocked, " << field(c, "not-run") << " not-run\n";
  if (field(m, "paths", "report").is_string()) o << "  report " << string_or(field(m, "paths", "report")) << "\n";
  return o.str();
}

}  // namespace spore::probe
