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
  auto* report = app.add_subcommand("report", "Show, compare and validate reports");
  report->require_subcommand(1);

  auto file = std::make_shared<std::string>();
  auto* show = report->add_subcommand("show", "Print a report as a table");
  show->add_option("file", *file, "Report JSON")->required()->check(CLI::ExistingFile);
  show->callback([&h, file] {
    h.action = [file] {
      std::fputs(probe::show_report(probe::read_json(*file)).c_str(), stdout);
      return 0;
    };
  });

  auto a = std::make_shared<std::string>(), b = std::make_shared<std::string>();
  auto* diff = report->add_subcommand("diff", "What changed between two reports: verdicts, figures, versions");
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
  auto* validate = report->add_subcommand("validate", "Validate a report against its JSON Schema");
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
