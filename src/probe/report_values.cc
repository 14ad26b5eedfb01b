// The figures of a report on screen: the short table every sample prints after it ran, and
// `spore report show FILE --values` for any report kind (NOTE [Figures on screen]). A run
// report's rows are shown from their probe reports when those files are still there: they hold
// the tolerances; otherwise from the values and differences the run report keeps.
//
// Reports come from files a person may have edited or truncated, so every field is read through
// the checked accessors of json_read.h (NOTE [Hostile JSON]): a missing key or a wrong type shows
// as "-", never as a throw from the JSON library or a crash.
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "probe/json_read.h"
#include "spore/error.h"
#include "spore/probe/report.h"

namespace spore::probe {
namespace {
using detail::elements;
using detail::field;

// One cell's text: numbers to 6 significant digits, strings as they are, the rest shortened.
std::string cell(const Json& j) {
  if (j.is_null()) return "-";
  if (j.is_string()) return j.get<std::string>();
  if (j.is_number_float()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", j.get<double>());
    return buf;
  }
  std::string s = j.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

// A plain text table: column widths from the widest cell, two spaces between columns.
class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  bool empty() const { return rows_.size() < 2; }
  std::string str(const std::string& indent) const {
    std::vector<size_t> width;
    for (const auto& r : rows_)
      for (size_t i = 0; i < r.size(); ++i) {
        if (width.size() <= i) width.push_back(0);
        width[i] = std::max(width[i], r[i].size());
      }
    std::ostringstream o;
    for (const auto& r : rows_) {
      std::string line = indent;
      for (size_t i = 0; i < r.size(); ++i)
        line += i + 1 < r.size() ? r[i] + std::string(width[i] - r[i].size() + 2, ' ') : r[i];
      o << line << "\n";
    }
    return o.str();
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

size_t index_of(std::vector<std::string>& list, const std::string& s) {
  for (size_t i = 0; i < list.size(); ++i)
    if (list[i] == s) return i;
  list.push_back(s);
  return list.size() - 1;
}

// Values named "MODE: FIGURE" become one table (a row per mode, a column per figure), so a
// sample that measures the same figures in several modes reads as a comparison; other values
// are listed as "name  value".
std::string values_table(const Json& values, const std::string& indent) {
  if (!values.is_object() || values.empty()) return "";
  std::vector<std::string> modes, figures;
  std::vector<std::vector<std::string>> grid;  // [mode][figure]
  Table plain({"figure", "value"});
  for (const auto& [key, v] : values.items()) {
    const size_t sep = key.find(": ");
    if (sep == std::string::npos || sep == 0 || sep + 2 >= key.size()) {
      plain.add({key, cell(v)});
      continue;
    }
    const size_t m = index_of(modes, key.substr(0, sep)), f = index_of(figures, key.substr(sep + 2));
    if (grid.size() <= m) grid.resize(m + 1);
    if (grid[m].size() <= f) grid[m].resize(f + 1, "-");
    grid[m][f] = cell(v);
  }
  std::string out = plain.empty() ? "" : plain.str(indent);
  if (!modes.empty()) {
    std::vector<std::string> header{"mode"};
    header.insert(header.end(), figures.begin(), figures.end());
    Table t(header);
    for (size_t m = 0; m < modes.size(); ++m) {
      std::vector<std::string> row{modes[m]};
      for (size_t f = 0; f < figures.size(); ++f) row.push_back(f < grid[m].size() ? grid[m][f] : "-");
      t.add(row);
    }
    out += t.str(indent);
  }
  return out;
}

std::string tolerance_text(const Json& c) {
  const Json& rtol = field(c, "rtol");
  std::string s = cell(field(c, "atol"));
  if (rtol.is_number() && rtol.get<double>() != 0) s += " + " + cell(rtol) + "*|ref|";
  return s;
}

std::string comparisons_table(const Json& results, const std::string& indent) {
  const Json& list = elements(field(results, "comparisons"));
  if (list.empty()) return "";
  Table t({"compared", "device", "n", "max|diff|", "tolerance", "ok"});
  for (const Json& c : list) {
    const Json& ok = field(c, "within_tolerance");
    t.add({cell(field(c, "what")), cell(field(c, "device")), cell(field(c, "count")), cell(field(c, "max_abs_diff")),
           tolerance_text(c), ok.is_boolean() ? (ok.get<bool>() ? "yes" : "NO") : "-"});
  }
  return t.str(indent);
}

std::string artifacts_table(const Json& report, const std::string& indent) {
  const Json& list = elements(field(report, "artifacts"));
  if (list.empty()) return "";
  Table t({"artifact", "bytes", "sha256", "reload max|err|", "tolerance"});
  for (const Json& a : list) {
    std::string sha = cell(field(a, "sha256"));
    if (sha.size() > 16) sha = sha.substr(0, 16) + "...";
    const Json& al = field(a, "alignment");
    t.add({cell(field(a, "name")), cell(field(a, "bytes")), sha, cell(field(al, "max_abs_error")),
           cell(field(al, "tolerance"))});
  }
  return t.str(indent);
}

std::string probe_figures(const Json& r) {
  const Json& results = field(r, "results");
  std::string body = values_table(field(results, "values"), "    ");
  body += comparisons_table(results, "    ");
  body += artifacts_table(r, "    ");
  std::ostringstream o;
  o << "  " << cell(field(r, "probe")) << ": " << cell(field(r, "verdict"));
  if (const Json& ms = field(r, "duration_ms"); ms.is_number()) {
    char buf[48];
    std::snprintf(buf, sizeof buf, " in %.0f ms", ms.get<double>());
    o << buf;
  }
  o << "\n" << (body.empty() ? "    (no figures recorded)\n" : body);
  return o.str();
}

std::string run_figures(const Json& r) {
  const Json& rows = field(r, "results");
  if (!rows.is_array()) throw Error(ErrorCode::kFormat, "run report without a \"results\" list; is the file complete?");
  std::ostringstream o;
  o << "values of run " << cell(field(r, "started_at")) << "\n";
  for (const Json& x : rows) {
    // The probe's own report holds the tolerances: shown from it when the file is still there.
    if (const Json& path = field(x, "report"); path.is_string()) {
      std::error_code ec;
      if (std::filesystem::is_regular_file(path.get<std::string>(), ec)) {
        try {
          o << probe_figures(read_json(path.get<std::string>()));
          continue;
        } catch (const Error&) {
          // unreadable: fall back to the figures the run report itself keeps
        }
      }
    }
    o << "  " << cell(field(x, "probe")) << ": " << cell(field(x, "verdict")) << "\n";
    std::string body = values_table(field(x, "values"), "    ");
    const Json& diffs = field(x, "max_abs_diff");
    if (diffs.is_object() && !diffs.empty()) {
      Table t({"compared", "max|diff|"});
      for (const auto& [k, v] : diffs.items()) t.add({k, cell(v)});
      body += t.str("    ");
    }
    o << (body.empty() ? "    (no figures recorded)\n" : body);
  }
  return o.str();
}

std::string op_matrix_figures(const Json& r) {
  const Json& rows = field(r, "rows");
  if (!rows.is_array()) throw Error(ErrorCode::kFormat, "op-matrix report without a \"rows\" list; is the file complete?");
  Table t({"op", "dtype", "verdict", "max|err| vs float64 CPU"});
  for (const Json& row : rows) {
    for (const Json& c : elements(field(row, "cells")))
      t.add({cell(field(row, "op")), cell(field(c, "dtype")), cell(field(c, "verdict")), cell(field(c, "max_abs_err"))});
  }
  return "values of the op matrix on " + cell(field(r, "device")) + "\n" + t.str("  ");
}

// The environment report has no "values" member: its figures are its scalar leaves.
void flatten(const Json& j, const std::string& path, int depth, Table& t) {
  if (depth > 8) {  // reports are shallow; anything deeper is shown as one cell
    t.add({path, cell(j)});
    return;
  }
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) flatten(v, path.empty() ? k : path + "." + k, depth + 1, t);
  } else if (j.is_array() && !j.empty() && (j.front().is_object() || j.front().is_array())) {
    for (size_t i = 0; i < j.size(); ++i) flatten(j[i], path + "[" + std::to_string(i) + "]", depth + 1, t);
  } else {
    t.add({path, cell(j)});
  }
}

std::string env_figures(const Json& r) {
  Table t({"field", "value"});
  for (const char* section : {"binary", "cpu", "memory", "blas", "cuda", "threads"})
    if (r.contains(section)) flatten(r.at(section), section, 0, t);  // r is an object here
  return "values of the environment report\n" + t.str("  ");
}

}  // namespace

std::string format_figures(const Json& probe_report) {
  if (!probe_report.is_object()) throw Error(ErrorCode::kFormat, "not a probe report (not a JSON object)");
  return probe_figures(probe_report);
}

std::string show_run_with_figures(const std::vector<Json>& probe_reports, const Json& run_report) {
  std::string out = probe_reports.empty() ? "" : "figures (the values each report records as evidence)\n";
  for (const Json& r : probe_reports) out += format_figures(r);
  return out + (out.empty() ? "" : "\n") + show_report(run_report);
}

std::string show_report_values(const Json& r) {
  const Json& kind = field(r, "kind");
  if (!kind.is_string()) throw Error(ErrorCode::kFormat, "not a Spore report (no \"kind\" field)");
  const std::string k = kind.get<std::string>();
  if (k == "probe") return "values of probe report\n" + probe_figures(r);
  if (k == "run") return run_figures(r);
  if (k == "op-matrix") return op_matrix_figures(r);
  if (k == "env") return env_figures(r);
  if (k == "gate") return format_gate_report(r);  // the gate's figures are its load table
  throw Error(ErrorCode::kFormat, "unknown report kind '" + k + "'; known: env, probe, run, op-matrix, gate");
}

}  // namespace spore::probe
