// spore env: prints the environment report and writes it to <out>/env-report.json.
#include <cstdio>
#include <filesystem>
#include <memory>

#include "commands.h"
#include "spore/probe.h"

namespace spore::cli {

void add_env_command(CLI::App& app, Handlers& h, const std::vector<std::string>& command) {
  auto* cmd = add_command(app, "env", "Print the environment report and write <out>/env-report.json",
                          "spore env --out outputs");
  auto out = std::make_shared<std::string>("outputs");
  auto json = std::make_shared<bool>(false);
  cmd->add_option("--out", *out, "Directory for the report")->capture_default_str();
  cmd->add_flag("--json", *json, "Print the JSON report instead of the table");
  cmd->callback([&h, out, json, command] {
    h.action = [out, json, command] {
      probe::Json env = probe::collect_env(command);
      std::filesystem::create_directories(*out);
      std::string path = std::filesystem::absolute(*out + "/env-report.json").lexically_normal().string();
      env["paths"]["report"] = path;
      probe::write_json(path, env);
      std::fputs(*json ? (env.dump(2) + "\n").c_str() : probe::format_env(env).c_str(), stdout);
      return 0;
    };
  });
}

}  // namespace spore::cli
