// Reports: atomic writes, tables for people, and diffs between two runs.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

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
  try {
    return Json::parse(ss.str());
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kFormat, "'" + path + "' is not JSON: " + e.what());
  }
}

std::string schema_path_for(const Json& report, const std::string& schema_dir) {
  std::string id = report.is_object() && report.contains("schema") && report["schema"].is_string()
                       ? report["schema"].get<std::string>() : "";
  // "spore.probe-report/1" -> probe-report.schema.json
  if (id.rfind("spore.", 0) != 0 || id.find('/') == std::string::npos)
    throw Error(ErrorCode::kFormat, "the document names no Spore report schema (field \"schema\" is '" + id + "')");
  return schema_dir + "/" + id.substr(6, id.find('/') - 6) + ".schema.json";
}

namespace {
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

std::string show_probe(const Json& r) {
  std::ostringstream o;
  o << "probe " << s_of(r["probe"]) << " [" << s_of(r["group"]) << "] on " << s_of(r["device_requested"])
    << ": " << s_of(r["verdict"]) << "\n";
  o << "  reason     " << s_of(r["reason"]) << "\n";
  o << "  ran on     " << (r["device_ran"].empty() ? std::string("-") : r["device_ran"].dump()) << "\n";
  const Json& p = r["results"]["process"];
  o << "  process    exit " << s_of(p["exit_code"]) << (p["signal"].is_string() ? " (" + s_of(p["signal"]) + ")" : "")
    << ", " << s_of(r["duration_ms"]) << " ms" << (p["timed_out"].get<bool>() ? ", timed out" : "") << "\n";
  o << "  when       " << s_of(r["started_at"]) << "\n";
  o << "  spore      " << s_of(r["environment"]["spore_version"]) << " (" << s_of(r["environment"]["git_commit"]) << ")\n";
  if (!r["results"]["comparisons"].empty()) {
    o << "  " << pad("comparison", 34) << pad("device", 10) << pad("n", 6) << pad("max|diff|", 12) << "ok\n";
    for (const Json& c : r["results"]["comparisons"])
      o << "  " << pad(s_of(c["what"]), 34) << pad(s_of(c["device"]), 10) << pad(s_of(c["count"]), 6)
        << pad(s_of(c["max_abs_diff"]), 12) << (c["within_tolerance"].get<bool>() ? "yes" : "NO") << "\n";
  }
  for (const Json& a : r["artifacts"])
    o << "  artifact   " << s_of(a["name"]) << " " << s_of(a["bytes"]) << " bytes sha256 " << s_of(a["sha256"])
      << (a["alignment"].is_object() ? " alignment " + s_of(a["alignment"]["max_abs_error"]) : "") << "\n";
  for (const auto& [k, v] : r["results"]["values"].items()) o << "  value      " << k << " = " << one_line(v.dump(), 100) << "\n";
  if (!s_of(p["stderr_tail"]).empty() && s_of(p["stderr_tail"]) != "-")
    o << "  stderr     " << one_line(s_of(p["stderr_tail"]), 200) << "\n";
  if (r["paths"]["report"].is_string()) o << "  report     " << s_of(r["paths"]["report"]) << "\n";
  return o.str();
}

std::string show_run(const Json& r) {
  std::ostringstream o;
  o << "run " << s_of(r["started_at"]) << " on " << s_of(r["device"]) << " (spore "
    << s_of(r["environment"]["spore_version"]) << ", commit " << s_of(r["environment"]["git_commit"]) << ", "
    << s_of(r["environment"]["cpu_model"]) << ")\n";
  o << "  " << pad("probe", 26) << pad("verdict", 15) << pad("ms", 9) << pad("exit", 6) << "reason\n";
  for (const Json& x : r["results"]) {
    char ms[32];
    std::snprintf(ms, sizeof ms, "%.0f", x["duration_ms"].get<double>());
    o << "  " << pad(s_of(x["probe"]), 26) << pad(s_of(x["verdict"]), 15) << pad(ms, 9)
      << pad(s_of(x["exit_code"]), 6) << one_line(s_of(x["reason"]), 90) << "\n";
  }
  const Json& c = r["counts"];
  o << "  " << s_of(c["observed-pass"]) << " observed-pass, " << s_of(c["observed-fail"]) << " observed-fail, "
    << s_of(c["blocked"]) << " blocked, " << s_of(c["not-run"]) << " not-run\n";
  o << "  report " << s_of(r["paths"]["report"]) << "\n  env    " << s_of(r["paths"]["env_report"]) << "\n";
  return o.str();
}

// Flattened figures of a report, keyed so that the same fact in two runs has the same key.
void put(std::map<std::string, std::string>& m, const std::string& k, const Json& v) { m[k] = s_of(v); }

std::map<std::string, std::string> figures(const Json& r, std::map<std::string, std::string>& versions,
                                           std::map<std::string, std::string>& verdicts) {
  std::map<std::string, std::string> f;
  std::string kind = r.value("kind", std::string());
  const Json* env = nullptr;
  if (kind == "env") {
    for (const char* k : {"spore_version", "git_commit", "build_type", "compiler", "cxx_flags", "path"})
      put(versions, std::string("binary.") + k, r["binary"][k]);
    put(versions, "cpu.model", r["cpu"]["model"]);
    put(versions, "cpu.simd_level", r["cpu"]["simd_level"]);
    put(versions, "blas", r["blas"]["version"]);
    put(versions, "blas.path", r["blas"]["path"]);
    put(versions, "cuda", r["cuda"]["status"]);
    for (const Json& l : r["shared_libraries"]) versions["library " + s_of(l)] = "loaded";
    put(f, "memory.total_bytes", r["memory"]["total_bytes"]);
    put(f, "cpu.usable_cores", r["cpu"]["usable_cores"]);
    return f;
  }
  if (r.contains("environment")) env = &r["environment"];
  if (env)
    for (const auto& [k, v] : env->items()) {
      if (k == "shared_libraries") {
        for (const Json& l : v) versions["library " + s_of(l)] = "loaded";
      } else {
        put(versions, k, v);
      }
    }
  if (kind == "run") {
    for (const Json& x : r["results"]) {
      std::string p = s_of(x["probe"]);
      put(verdicts, p, x["verdict"]);
      for (const auto& [k, v] : x["max_abs_diff"].items()) put(f, p + " max_abs_diff " + k, v);
      for (const auto& [k, v] : x["values"].items())
        if (!v.is_object() && !v.is_array()) put(f, p + " " + k, v);
    }
  } else if (kind == "probe") {
    std::string p = s_of(r["probe"]);
    put(verdicts, p, r["verdict"]);
    for (const Json& c : r["results"]["comparisons"]) put(f, "max_abs_diff " + s_of(c["what"]), c["max_abs_diff"]);
    for (const auto& [k, v] : r["results"]["values"].items())
      if (!v.is_object() && !v.is_array()) put(f, k, v);
    put(f, "exit_code", r["results"]["process"]["exit_code"]);
    for (const Json& a : r["artifacts"]) put(f, "sha256 " + s_of(a["name"]), a["sha256"]);
  } else if (kind == "op-matrix") {
    for (const Json& row : r["rows"])
      for (const Json& c : row["cells"]) {
        std::string k = s_of(row["op"]) + "/" + s_of(c["dtype"]);
        put(verdicts, k, c["verdict"]);
        put(f, k + " max_abs_err", c["max_abs_err"]);
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
  if (!r.is_object() || !r.contains("kind")) throw Error(ErrorCode::kFormat, "not a Spore report (no \"kind\" field)");
  std::string kind = r["kind"].get<std::string>();
  if (kind == "env") return format_env(r);
  if (kind == "probe") return show_probe(r);
  if (kind == "run") return show_run(r);
  if (kind == "op-matrix") return format_op_matrix(r);
  throw Error(ErrorCode::kFormat, "unknown report kind '" + kind + "'");
}

std::string diff_reports(const Json& a, const Json& b) {
  std::string ka = a.value("kind", std::string()), kb = b.value("kind", std::string());
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
