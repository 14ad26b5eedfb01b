// spore report show | diff | validate.
#include <cstdio>
#include <memory>

#include "commands.h"
#include "spore/probe.h"

#ifndef SPORE_SCHEMA_DIR
#define SPORE_SCHEMA_DIR "schemas"
#endif

namespace spore::cli {

void add_report_commands(CLI::App& app, Handlers& h, const std::vector<std::string>&) {
  auto* report = add_command(app, "report", "Show, compare and validate reports",
                            "spore report show outputs/env-report.json --values");
  report->require_subcommand(1);

  auto file = std::make_shared<std::string>();
  auto values = std::make_shared<bool>(false);
  auto* show = add_command(*report, "show", "Print a report as a table (--values: its values and tolerances)",
                           "spore report show outputs/board-run-20260101T000000Z.json --values");
  show->add_option("file", *file, "Report JSON")->required()->check(CLI::ExistingFile);
  show->add_flag("--values", *values, "Print the values the report records, with their tolerances");
  show->callback([&h, file, values] {
    h.action = [file, values] {
      probe::Json doc = probe::read_json(*file);
      std::fputs((*values ? probe::show_report_values(doc) : probe::show_report(doc)).c_str(), stdout);
      return 0;
    };
  });

  auto a = std::make_shared<std::string>(), b = std::make_shared<std::string>();
  auto* diff = add_command(*report, "diff", "What changed between two reports: verdicts, figures, versions",
                           "spore report diff outputs/board-run-A.json outputs/board-run-B.json");
  diff->add_option("a", *a, "Earlier report")->required()->check(CLI::ExistingFile);
  diff->add_option("b", *b, "Later report")->required()->check(CLI::ExistingFile);
  diff->callback([&h, a, b] {
    h.action = [a, b] {
      std::fputs(probe::diff_reports(probe::read_json(*a), probe::read_json(*b)).c_str(), stdout);
      return 0;
    };
  });

  auto vfile = std::make_shared<std::string>();
  auto schemas = std::make_shared<std::string>(SPORE_SCHEMA_DIR);
  auto* validate = add_command(*report, "validate", "Validate a report against its JSON Schema",
                               "spore report validate outputs/env-report.json");
  validate->add_option("file", *vfile, "Report JSON")->required()->check(CLI::ExistingFile);
  validate->add_option("--schemas", *schemas, "Directory of the schemas")->capture_default_str();
  validate->callback([&h, vfile, schemas] {
    h.action = [vfile, schemas] {
      probe::Json doc = probe::read_json(*vfile);
      std::string path = probe::schema_path_for(doc, *schemas);
      auto errors = probe::validate_schema(doc, probe::read_json(path));
      for (const auto& e : errors) std::printf("%s\n", e.c_str());
      std::printf("%s: %s against %s\n", vfile->c_str(), errors.empty() ? "valid" : "INVALID", path.c_str());
      return errors.empty() ? 0 : 1;
    };
  });
}

}  // namespace spore::cli
