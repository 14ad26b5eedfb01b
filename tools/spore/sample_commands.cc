// spore samples list | run-all [--suite chapter|llm]: the chapter's sample suite
// (examples/chapter5/, the default) or the LLM probe suite (tools/spore/llm_probes.cc, the table
// of chapter section 5.11; NOTE [LLM probe suite]).
#include <algorithm>
#include <cstdio>
#include <memory>

#include "commands.h"
#include "spore/probe.h"

namespace spore::cli {

int print_run(const probe::RunSummary& s);

void add_sample_commands(CLI::App& app, Handlers& h, const std::vector<std::string>& command) {
  auto* samples = add_command(app, "samples", "The chapter 5 sample suite", "spore samples run-all");
  samples->require_subcommand(1);
  auto* list = add_command(*samples, "list", "List the samples", "spore samples list");
  list->callback([&h] {
    h.action = [] {
      for (const auto* p : probe::all_probes("sample")) std::printf("%-22s %s\n", p->name.c_str(), p->description.c_str());
      return 0;
    };
  });
  auto device = std::make_shared<std::string>("cpu");
  auto timeout = std::make_shared<double>(120);
  auto out = std::make_shared<std::string>("outputs");
  auto suite = std::make_shared<std::string>("chapter");
  auto* run_all = add_command(*samples, "run-all", "Run every sample in its own process; figures, summary table and reports",
                             "spore samples run-all --out outputs --timeout 120");
  run_all->add_option("--device", *device, "Device the samples must run on")->capture_default_str();
  run_all->add_option("--timeout", *timeout, "Seconds per sample")->check(CLI::PositiveNumber)->capture_default_str();
  run_all->add_option("--out", *out, "Directory for the reports")->capture_default_str();
  run_all->add_option("--suite", *suite, "chapter: the samples 01..07; llm: the LLM models of chapter 5.11")
      ->check(CLI::IsMember({"chapter", "llm"}))
      ->capture_default_str();
  run_all->callback([&h, device, timeout, out, suite, command] {
    h.action = [device, timeout, out, suite, command] {
      std::vector<std::string> names;
      for (const auto* p : probe::all_probes(*suite == "llm" ? "llm" : "sample")) names.push_back(p->name);
      // The LLM suite: the fixtures first, then SmolLM2, then the chapter's rows.
      std::stable_partition(names.begin(), names.end(), [](const std::string& n) { return n.rfind("llm_chapter_", 0) != 0; });
      // The chapter's order: the environment check first, then 01..07.
      std::stable_partition(names.begin(), names.end(), [](const std::string& n) { return n == "check_env"; });
      probe::RunOptions o;
      o.device = *device;
      o.timeout_s = *timeout;
      o.out_dir = *out;
      return print_run(probe::run_probes(names, o, command));
    };
  });
}

}  // namespace spore::cli
