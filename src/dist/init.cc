// dist::init: the process group from the launcher's environment (NOTE [Distributed training]).
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>

#include "dist/backends.h"
#include "spore/context.h"
#include "spore/dist.h"

namespace spore::dist {

namespace {

std::unique_ptr<ProcessGroup> g_world;
std::mutex g_mu;

std::optional<long long> env_int(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  char* end = nullptr;
  long long x = std::strtoll(v, &end, 10);
  if (*end != '\0')
    throw Error(ErrorCode::kValue,
                std::string("dist::init: ") + name + "=\"" + v + "\" is not an integer");
  return x;
}

// This process's command line, for the `spore launch` line in error messages.
std::vector<std::string> own_argv() {
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::string> argv;
  std::string cur;
  for (char c : all) {
    if (c == '\0') {
      argv.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (argv.empty()) argv.push_back("PROGRAM");
  return argv;
}

struct Launcher {
  std::string name;  // "" when none
  std::optional<long long> rank, size;
};

// The MPI launchers' variables: Open MPI's mpirun, and PMIx / PMI launchers (MPICH's mpiexec,
// Slurm's srun) whose processes MPI_Init joins the same way.
Launcher mpi_launcher() {
  if (auto r = env_int("OMPI_COMM_WORLD_RANK"))
    return {"mpirun (Open MPI)", r, env_int("OMPI_COMM_WORLD_SIZE")};
  if (auto r = env_int("PMIX_RANK")) return {"a PMIx launcher", r, env_int("PMIX_SIZE")};
  if (auto r = env_int("PMI_RANK")) return {"a PMI launcher", r, env_int("PMI_SIZE")};
  return {};
}

InitOptions resolved(InitOptions o) {
  if (auto t = env_int("SPORE_DIST_TIMEOUT_S")) {
    if (*t <= 0)
      throw Error(ErrorCode::kValue,
                  "dist::init: SPORE_DIST_TIMEOUT_S must be a positive number of seconds");
    o.timeout = std::chrono::seconds(*t);
  }
  if (o.check_order_from_env_or_build) {
#ifndef NDEBUG
    o.check_order = true;
#endif
    if (auto d = env_int("SPORE_DIST_DEBUG")) o.check_order = *d != 0;
  }
  return o;
}

// `spore launch` sets SPORE_NUM_THREADS to cores / ranks; the context's "one per core" default
// would otherwise have every rank start a thread per core.
void apply_thread_count() {
  auto n = env_int("SPORE_NUM_THREADS");
  if (!n) return;
  if (*n <= 0) throw Error(ErrorCode::kValue, "dist::init: SPORE_NUM_THREADS must be at least 1");
  if (context().num_threads == 0) set_num_threads((int)*n);
}

}  // namespace

std::string launch_hint(int ranks, const std::vector<std::string>& argv) {
  std::string s = "spore launch -n " + std::to_string(ranks) + " --";
  for (const std::string& a : argv) s += " " + a;
  return s;
}

ProcessGroup& init(const InitOptions& options) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_world) return *g_world;
  const InitOptions o = resolved(options);
  const Launcher mpi = mpi_launcher();
  const std::optional<long long> rank = env_int("RANK"), world = env_int("WORLD_SIZE");
  if (mpi.name.empty()) {
    if (rank || world) {
      const long long n = world.value_or(2);
      throw Error(
          ErrorCode::kValue,
          "dist::init: RANK/WORLD_SIZE are set (a torchrun-style launcher) but no MPI launcher "
          "started this "
          "process; Spore's collectives run on MPI, so start the ranks with mpirun, e.g. `" +
              launch_hint((int)n, own_argv()) + "`");
    }
    if (!o.allow_single_process)
      throw Error(ErrorCode::kValue,
                  "dist::init: no launcher environment (OMPI_COMM_WORLD_RANK, PMIX_RANK or "
                  "RANK/WORLD_SIZE with "
                  "mpirun): start the program on N processes with `" +
                      launch_hint(2, own_argv()) +
                      "` (or set InitOptions::allow_single_process to run it as a group of one)");
    g_world = std::make_unique<ProcessGroup>(detail::make_self_backend(), o);
    detail::install_collective_runtime(g_world.get());
    apply_thread_count();
    return *g_world;
  }
  auto backend = detail::make_mpi_backend();
  const int r = backend->rank(), s = backend->size();
  // The torchrun-style variables, when a script sets them under mpirun, must say the same thing.
  if ((rank && *rank != r) || (world && *world != s) || (mpi.size && *mpi.size != s)) {
    backend->finalize();
    throw Error(ErrorCode::kValue,
                "dist::init: the launcher's variables disagree with MPI: MPI says rank " +
                    std::to_string(r) + " of " + std::to_string(s) +
                    ", the environment RANK=" + (rank ? std::to_string(*rank) : "unset") +
                    " WORLD_SIZE=" + (world ? std::to_string(*world) : "unset") +
                    "; unset RANK/WORLD_SIZE or start "
                    "the job with `" +
                    launch_hint(s, own_argv()) + "`");
  }
  g_world = std::make_unique<ProcessGroup>(std::move(backend), o);
  detail::install_collective_runtime(g_world.get());
  apply_thread_count();
  return *g_world;
}

bool is_initialized() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_world != nullptr;
}

ProcessGroup& world() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_world) throw Error(ErrorCode::kValue, "dist::world: call dist::init() first");
  return *g_world;
}

int get_rank() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_world ? g_world->rank() : 0;
}

int get_group_size() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_world ? g_world->size() : 1;
}

void finalize() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_world) g_world->finalize_backend();
  // The group object stays (references to it remain valid); its calls now refuse, the collective
  // ops' included (their runtime stays installed over it).
}

}  // namespace spore::dist
