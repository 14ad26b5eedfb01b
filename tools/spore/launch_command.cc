// spore launch -n N -- PROGRAM ARGS: a thin wrapper over Open MPI's mpirun for people who do not
// know its flags (NOTE [Distributed training]). It runs N copies of PROGRAM on this machine with
// the cores shared out (OMP_NUM_THREADS = SPORE_NUM_THREADS = cores / N, at least 1, so the
// ranks' thread teams do not oversubscribe the machine), passive OpenMP waiting (spinning
// workers of one rank would steal the cores of the others), --oversubscribe when N exceeds the
// cores, and --allow-run-as-root when run as root (containers), then --mpirun-args. mpirun replaces
// this process, so signals and the exit status are mpirun's.
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "commands.h"
#include "spore/error.h"

namespace spore::cli {

namespace {

int usable_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

struct LaunchArgs {
  int ranks = 0;
  int threads = 0;  // 0: cores / ranks
  std::string mpirun = "mpirun";
  std::string mpirun_args_text;
  std::vector<std::string> program;
  bool dry_run = false;
};

std::vector<std::string> launch_argv(const LaunchArgs& a, int cores, bool root) {
  const int threads = a.threads > 0 ? a.threads : std::max(1, cores / a.ranks);
  std::vector<std::string> argv{a.mpirun, "-np", std::to_string(a.ranks)};
  if (a.ranks > cores) argv.push_back("--oversubscribe");
  if (root) argv.push_back("--allow-run-as-root");
  for (const std::string& kv :
       {"OMP_NUM_THREADS=" + std::to_string(threads),
        "SPORE_NUM_THREADS=" + std::to_string(threads), std::string("OMP_WAIT_POLICY=passive")}) {
    argv.push_back("-x");
    argv.push_back(kv);
  }
  std::istringstream extra(a.mpirun_args_text);
  for (std::string word; extra >> word;) argv.push_back(word);
  argv.insert(argv.end(), a.program.begin(), a.program.end());
  return argv;
}

}  // namespace

void add_launch_command(CLI::App& app, Handlers& h) {
  auto* cmd = add_command(
      app, "launch",
      "Run a program on N processes with MPI (data-parallel training), cores shared out",
      "spore launch -n 2 -- ./bin/examples/digits_cnn --epochs 5");
  auto a = std::make_shared<LaunchArgs>();
  cmd->add_option("-n,--ranks", a->ranks, "Number of processes (ranks)")
      ->required()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--threads", a->threads,
                  "Threads per rank (default: usable cores / ranks, at least 1)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--mpirun", a->mpirun, "The mpirun to run (default: mpirun on PATH)");
  // One string, split at spaces: CLI11 (2.1) ends a vector option's values at `--` and consumes
  // it, so a repeatable option just before `--` would swallow the separator of PROGRAM.
  cmd->add_option("--mpirun-args", a->mpirun_args_text,
                  "More arguments for mpirun, split at spaces, e.g. \"--mca btl self,vader\"");
  cmd->add_flag("--dry-run", a->dry_run, "Print the mpirun command line instead of running it");
  cmd->add_option("PROGRAM", a->program, "The program and its arguments, after --")->required();
  cmd->callback([&h, a] {
    h.action = [a] {
      const std::vector<std::string> argv = launch_argv(*a, usable_cores(), geteuid() == 0);
      if (a->dry_run) {
        for (size_t i = 0; i < argv.size(); ++i) std::printf("%s%s", i ? " " : "", argv[i].c_str());
        std::printf("\n");
        return 0;
      }
      std::vector<char*> cargv;
      for (const std::string& s : argv) cargv.push_back(const_cast<char*>(s.c_str()));
      cargv.push_back(nullptr);
      std::fflush(stdout);
      execvp(cargv[0], cargv.data());
      const int err = errno;
      throw Error(ErrorCode::kIO,
                  "launch: cannot run '" + a->mpirun + "': " + std::strerror(err) +
                      (err == ENOENT ? "; install Open MPI (Debian: openmpi-bin, or "
                                       "scripts/install-deps.sh) or name it with --mpirun PATH"
                                     : ""));
    };
  });
}

}  // namespace spore::cli
