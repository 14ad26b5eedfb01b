// spore probe list | run | ops.
#include <cstdio>
#include <memory>

#include "commands.h"
#include "spore/error.h"
#include "spore/probe.h"

namespace spore::cli {

namespace {
struct RunFlags {
  std::string device = "cpu";
  double timeout = 120;
  std::string out = "outputs";
};

void add_run_flags(CLI::App* cmd, RunFlags& f) {
  cmd->add_option("--device", f.device, "Device the probes must run on: cpu, cuda, cuda:N")->capture_default_str();
  cmd->add_option("--timeout", f.timeout, "Seconds before a probe's process group is killed")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--out", f.out, "Directory for the reports")->capture_default_str();
}

probe::RunOptions options(const RunFlags& f) {
  probe::RunOptions o;
  o.device = f.device;
  o.timeout_s = f.timeout;
  o.out_dir = f.out;
  return o;
}
}  // namespace

int print_run(const probe::RunSummary& s) {
  std::fputs(probe::show_run_with_figures(s.probe_reports, s.run_report).c_str(), stdout);
  return s.failed ? 1 : 0;
}

void add_probe_commands(CLI::App& app, Handlers& h, const std::vector<std::string>& command) {
  auto* probe_cmd = add_command(app, "probe", "Run probes, each in its own process", "spore probe run check_env");
  probe_cmd->require_subcommand(1);

  auto* list = add_command(*probe_cmd, "list", "List the registered probes", "spore probe list");
  list->callback([&h] {
    h.action = [] {
      for (const auto* p : probe::all_probes())
        if (p->group != "ops")
          std::printf("%-24s %-8s %s\n", p->name.c_str(), p->group.c_str(), p->description.c_str());
      std::printf("%-24s %-8s %s\n", "op:<name>", "ops", "one row of the op capability matrix (spore probe ops)");
      return 0;
    };
  });

  auto flags = std::make_shared<RunFlags>();
  auto names = std::make_shared<std::vector<std::string>>();
  auto all = std::make_shared<bool>(false);
  auto* run = add_command(*probe_cmd, "run", "Run the named probes (or --all) and write their reports",
                          "spore probe run 01_tensor_ops 05_autograd_train --timeout 60");
  run->add_option("names", *names, "Probe names (see `spore probe list`)");
  run->add_flag("--all", *all, "Run every registered probe except the op matrix rows");
  add_run_flags(run, *flags);
  run->callback([&h, flags, names, all, command] {
    h.action = [flags, names, all, command] {
      std::vector<std::string> list = *names;
      if (*all)
        for (const auto* p : probe::all_probes())
          if (p->group != "ops") list.push_back(p->name);
      if (list.empty()) throw Error(ErrorCode::kValue, "probe run: name probes or pass --all");
      return print_run(probe::run_probes(list, options(*flags), command));
    };
  });

  auto ops_flags = std::make_shared<RunFlags>();
  auto* ops = add_command(*probe_cmd, "ops", "The op capability matrix: every op x every dtype on a device",
                          "spore probe ops --ops add,matmul");
  add_run_flags(ops, *ops_flags);
  auto only = std::make_shared<std::vector<std::string>>();
  ops->add_option("--ops", *only, "Only these ops (comma separated)")->delimiter(',');
  ops->callback([&h, ops_flags, only, command] {
    h.action = [ops_flags, only, command] {
      probe::Json m = probe::run_op_matrix(options(*ops_flags), command, nullptr, *only);
      std::fputs(probe::format_op_matrix(m).c_str(), stdout);
      return 0;
    };
  });
}

}  // namespace spore::cli
