// Reports: atomic writes, tables for people, and diffs between two runs.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "probe/json_read.h"
#include "spore/error.h"
#include "spore/probe/env.h"
#include "spore/probe/op_matrix.h"
#include "spore/probe/report.h"

namespace spore::probe {

void write_json(const std::string& path, const Json& report) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(ErrorCode::kIO, "cannot write report '" + tmp + "'");
    out << report.dump(2) << "\n";
    if (!out.flush()) throw Error(ErrorCode::kIO, "cannot write report '" + tmp + "'");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw Error(ErrorCode::kIO, "cannot move report into place at '" + path + "'");
  }
}

Json read_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIO, "cannot open report '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_json(ss.str(), "'" + path + "'");
}

std::string schema_path_for(const Json& report, const std::string& schema_dir) {
  std::string id = detail::string_or(detail::field(report, "schema"));
  // "spore.probe-report/1" -> probe-report.schema.json
  if (id.rfind("spore.", 0) != 0 || id.find('/') == std::string::npos)
    throw Error(ErrorCode::kFormat, "the document names no Spore report schema (field \"schema\" is '" + id + "')");
  return schema_dir + "/" + id.substr(6, id.find('/') - 6) + ".schema.json";
}

namespace {
using detail::elements;
using detail::field;
using detail::is_true;
using detail::members;

std::string s_of(const Json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_null()) return "-";
  if (j.is_number_float()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", j.get<double>());
    return buf;
  }
  return j.dump();
}

std::string pad(std::string s, size_t w) {
  if (s.size() > w) return s.substr(0, w - 1) + "~";
  return s + std::string(w - s.size(), ' ');
}

std::string one_line(std::string s, size_t max) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  return s.size() > max ? s.substr(0, max - 3) + "..." : s;
}

// NOTE [Hostile JSON]: every read below goes through field/elements/members, so a report that
// lacks a member prints "-" instead of reaching undefined behaviour.
std::string show_probe(const Json& r) {
  std::ostringstream o;
  o << "probe " << s_of(field(r, "probe")) << " [" << s_of(field(r, "group")) << "] on "
    << s_of(field(r, "device_requested")) << ": " << s_of(field(r, "verdict")) << "\n";
  o << "  reason     " << s_of(field(r, "reason")) << "\n";
  const Json& ran = field(r, "device_ran");
  o << "  ran on     " << (ran.empty() ? std::string("-") : ran.dump()) << "\n";
  const Json& p = field(r, "results", "process");
  const Json& signal = field(p, "signal");
  o << "  process    exit " << s_of(field(p, "exit_code")) << (signal.is_string() ? " (" + s_of(signal) + ")" : "")
    << ", " << s_of(field(r, "duration_ms")) << " ms" << (is_true(field(p, "timed_out")) ? ", timed out" : "") << "\n";
  o << "  when       " << s_of(field(r, "started_at")) << "\n";
  o << "  spore      " << s_of(field(r, "environment", "spore_version")) << " ("
    << s_of(field(r, "environment", "git_commit")) << ")\n";
  const Json& comparisons = elements(field(r, "results", "comparisons"));
  if (!comparisons.empty()) {
    o << "  " << pad("comparison", 34) << pad("device", 10) << pad("n", 6) << pad("max|diff|", 12) << "ok\n";
    for (const Json& c : comparisons)
      o << "  " << pad(s_of(field(c, "what")), 34) << pad(s_of(field(c, "device")), 10)
        << pad(s_of(field(c, "count")), 6) << pad(s_of(field(c, "max_abs_diff")), 12)
        << (is_true(field(c, "within_tolerance")) ? "yes" : "NO") << "\n";
  }
  for (const Json& a : elements(field(r, "artifacts"))) {
    const Json& alignment = field(a, "alignment");
    o << "  artifact   " << s_of(field(a, "name")) << " " << s_of(field(a, "bytes")) << " bytes sha256 "
      << s_of(field(a, "sha256"))
      << (alignment.is_object() ? " alignment " + s_of(field(alignment, "max_abs_error")) : "") << "\n";
  }
  for (const auto& [k, v] : members(field(r, "results", "values")).items())
    o << "  value      " << k << " = " << one_line(v.dump(), 100) << "\n";
  const std::string tail = s_of(field(p, "stderr_tail"));
  if (!tail.empty() && tail != "-") o << "  stderr     " << one_line(tail, 200) << "\n";
  if (field(r, "paths", "report").is_string()) o << "  report     " << s_of(field(r, "paths", "report")) << "\n";
  return o.str();
}

std::string show_run(const Json& r) {
  std::ostringstream o;
  const Json& env = field(r, "environment");
  o << "run " << s_of(field(r, "started_at")) << " on " << s_of(field(r, "device")) << " (spore "
    << s_of(field(env, "spore_version")) << ", commit " << s_of(field(env, "git_commit")) << ", "
    << s_of(field(env, "cpu_model")) << ")\n";
  o << "  " << pad("probe", 26) << pad("verdict", 15) << pad("ms", 9) << pad("exit", 6) << "reason\n";
  for (const Json& x : elements(field(r, "results"))) {
    const Json& duration = field(x, "duration_ms");
    char ms[32] = "-";
    if (duration.is_number()) std::snprintf(ms, sizeof ms, "%.0f", duration.get<double>());
    o << "  " << pad(s_of(field(x, "probe")), 26) << pad(s_of(field(x, "verdict")), 15) << pad(ms, 9)
      << pad(s_of(field(x, "exit_code")), 6) << one_line(s_of(field(x, "reason")), 90) << "\n";
  }
  const Json& c = field(r, "counts");
  o << "  " << s_of(field(c, "observed-pass")) << " observed-pass, " << s_of(field(c, "observed-fail"))
    << " observed-fail, " << s_of(field(c, "blocked")) << " blocked, " << s_of(field(c, "not-run")) << " not-run\n";
  o << "  report " << s_of(field(r, "paths", "report")) << "\n  env    " << s_of(field(r, "paths", "env_report"))
    << "\n";
  return o.str();
}

// Flattened figures of a report, keyed so that the same fact in two runs has the same key.
void put(std::map<std::string, std::string>& m, const std::string& k, const Json& v) { m[k] = s_of(v); }

std::map<std::string, std::string> figures(const Json& r, std::map<std::string, std::string>& versions,
                                           std::map<std::string, std::string>& verdicts) {
  std::map<std::string, std::string> f;
  std::string kind = detail::string_or(field(r, "kind"));
  if (kind == "env") {
    for (const char* k : {"spore_version", "git_commit", "build_type", "compiler", "cxx_flags", "path"})
      put(versions, std::string("binary.") + k, field(r, "binary", k));
    put(versions, "cpu.model", field(r, "cpu", "model"));
    put(versions, "cpu.simd_level", field(r, "cpu", "simd_level"));
    put(versions, "blas", field(r, "blas", "version"));
    put(versions, "blas.path", field(r, "blas", "path"));
    put(versions, "cuda", field(r, "cuda", "status"));
    for (const Json& l : elements(field(r, "shared_libraries"))) versions["library " + s_of(l)] = "loaded";
    put(f, "memory.total_bytes", field(r, "memory", "total_bytes"));
    put(f, "cpu.usable_cores", field(r, "cpu", "usable_cores"));
    return f;
  }
  for (const auto& [k, v] : members(field(r, "environment")).items()) {
    if (k == "shared_libraries") {
      for (const Json& l : elements(v)) versions["library " + s_of(l)] = "loaded";
    } else {
      put(versions, k, v);
    }
  }
  if (kind == "run") {
    for (const Json& x : elements(field(r, "results"))) {
      std::string p = s_of(field(x, "probe"));
      put(verdicts, p, field(x, "verdict"));
      for (const auto& [k, v] : members(field(x, "max_abs_diff")).items()) put(f, p + " max_abs_diff " + k, v);
      for (const auto& [k, v] : members(field(x, "values")).items())
        if (!v.is_object() && !v.is_array()) put(f, p + " " + k, v);
    }
  } else if (kind == "probe") {
    std::string p = s_of(field(r, "probe"));
    put(verdicts, p, field(r, "verdict"));
    for (const Json& c : elements(field(r, "results", "comparisons")))
      put(f, "max_abs_diff " + s_of(field(c, "what")), field(c, "max_abs_diff"));
    for (const auto& [k, v] : members(field(r, "results", "values")).items())
      if (!v.is_object() && !v.is_array()) put(f, k, v);
    put(f, "exit_code", field(r, "results", "process", "exit_code"));
    for (const Json& a : elements(field(r, "artifacts"))) put(f, "sha256 " + s_of(field(a, "name")), field(a, "sha256"));
  } else if (kind == "gate") {
    for (const Json& c : elements(field(r, "checks"))) put(verdicts, "gate " + s_of(field(c, "name")), field(c, "verdict"));
    for (const auto& [k, v] : members(field(r, "load")).items())
      if (!v.is_object() && !v.is_array()) put(f, "load " + k, v);
  } else if (kind == "op-matrix") {
    for (const Json& row : elements(field(r, "rows")))
      for (const Json& c : elements(field(row, "cells"))) {
        std::string k = s_of(field(row, "op")) + "/" + s_of(field(c, "dtype"));
        put(verdicts, k, field(c, "verdict"));
        put(f, k + " max_abs_err", field(c, "max_abs_err"));
      }
  }
  return f;
}

void diff_maps(std::ostringstream& o, const char* title, const std::map<std::string, std::string>& a,
               const std::map<std::string, std::string>& b, int& changes) {
  std::ostringstream sec;
  int n = 0;
  for (const auto& [k, va] : a) {
    auto it = b.find(k);
    if (it == b.end()) {
      sec << "  - " << k << ": " << va << "\n";
      ++n;
    } else if (it->second != va) {
      sec << "  ~ " << k << ": " << va << " -> " << it->second << "\n";
      ++n;
    }
  }
  for (const auto& [k, vb] : b)
    if (!a.count(k)) {
      sec << "  + " << k << ": " << vb << "\n";
      ++n;
    }
  if (n) o << title << " (" << n << ")\n" << sec.str();
  changes += n;
}
}  // namespace

std::string show_report(const Json& r) {
  const Json& kind_field = field(r, "kind");
  if (!kind_field.is_string())
    throw Error(ErrorCode::kFormat, "not a Spore report (no string \"kind\" field at the top level)");
  std::string kind = kind_field.get<std::string>();
  if (kind == "env") return format_env(r);
  if (kind == "probe") return show_probe(r);
  if (kind == "run") return show_run(r);
  if (kind == "op-matrix") return format_op_matrix(r);
  if (kind == "gate") return format_gate_report(r);
  throw Error(ErrorCode::kFormat, "unknown report kind '" + kind + "' (env, probe, run, op-matrix or gate)");
}

std::string diff_reports(const Json& a, const Json& b) {
  std::string ka = detail::string_or(field(a, "kind")), kb = detail::string_or(field(b, "kind"));
  if (ka.empty() || kb.empty()) throw Error(ErrorCode::kFormat, "report diff: both files must be Spore reports");
  std::ostringstream o;
  if (ka != kb) o << "note: comparing a " << ka << " report with a " << kb << " report\n";
  std::map<std::string, std::string> va, vb, da, db;
  auto fa = figures(a, va, da), fb = figures(b, vb, db);
  int changes = 0;
  diff_maps(o, "verdicts", da, db, changes);
  diff_maps(o, "figures", fa, fb, changes);
  diff_maps(o, "versions and environment", va, vb, changes);
  if (!changes) o << "no differences in verdicts, figures or versions\n";
  return o.str();
}

}  // namespace spore::probe
