// Reports: writing, showing, diffing and validating the JSON reports the harness leaves.
//
// Every report carries the six things chapter 5.12 asks of an experiment: hardware and software
// ("environment"), artifacts, the command, results, a verdict per result, and the paths of the
// raw reports. Their JSON Schemas live in schemas/ and the tests validate every report.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "spore/json_limits.h"
#include "spore/probe/probe.h"

namespace spore::probe {

inline constexpr const char* kEnvSchemaId = "spore.env-report/1";
inline constexpr const char* kProbeSchemaId = "spore.probe-report/1";
inline constexpr const char* kRunSchemaId = "spore.run-report/1";
inline constexpr const char* kOpMatrixSchemaId = "spore.op-matrix/1";
inline constexpr const char* kGateSchemaId = "spore.gate-report/1";  // spore gate (NOTE [Machine gate])

// Writes `report` as indented JSON, atomically (temporary file, then rename). Throws kIO.
void write_json(const std::string& path, const Json& report);
Json read_json(const std::string& path);  // throws kIO / kFormat (parse_json's rules)
// Parses outside JSON text. Malformed text, or objects and arrays nested deeper than
// kMaxJsonDepth, is a kFormat error naming `what` (NOTE [Hostile JSON]).
using spore::kMaxJsonDepth;  // the one bound (spore/json_limits.h)
Json parse_json(std::string_view text, const std::string& what);

// A report as a table (any of the report kinds). Members a malformed report lacks print as "-";
// a document that is not a report (no string "kind") is a kFormat error.
std::string show_report(const Json& report);
// A gate report (`spore gate`): a verdict per check, then the load figures beside the chapter's.
std::string format_gate_report(const Json& gate_report);
// The figures a report records (values, comparisons with their tolerances, artifacts), for any
// report kind: `spore report show FILE --values`. Throws kFormat on what is not a report.
std::string show_report_values(const Json& report);
// One probe report's figures as a short table; values named "MODE: FIGURE" become a table with a
// row per mode (NOTE [Figures on screen]).
std::string format_figures(const Json& probe_report);
// What a sample program and `spore samples run-all` print: each probe's figures, then the
// summary table of the run.
std::string show_run_with_figures(const std::vector<Json>& probe_reports, const Json& run_report);
// What changed between two reports of the same kind: verdicts, figures, versions.
std::string diff_reports(const Json& a, const Json& b);

// Validates `doc` against a JSON Schema using the subset Spore's schemas use: type (string or
// list), required, properties, additionalProperties (bool or schema), items, enum, const,
// minimum, maximum, pattern-free strings, $ref to "#/$defs/NAME". Returns the problems found,
// each as "<json pointer>: what" (empty when valid).
std::vector<std::string> validate_schema(const Json& doc, const Json& schema);
// The schema file for a report's "schema" field, under `schema_dir` (schemas/ in the repo).
std::string schema_path_for(const Json& report, const std::string& schema_dir);

}  // namespace spore::probe
