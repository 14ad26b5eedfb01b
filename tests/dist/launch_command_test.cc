// `spore launch`: the mpirun line it builds (--dry-run), a real 2-rank run, and a missing mpirun.
#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <string>

#include "dist/run_command.h"

namespace {

using spore::dist::test::CommandResult;
CommandResult run(const std::string& cmd) {
  return spore::dist::test::run_command(cmd);
}

int cores() {
  cpu_set_t set;
  sched_getaffinity(0, sizeof(set), &set);
  return CPU_COUNT(&set);
}

const std::string kSpore = SPORE_CLI;

TEST(SporeLaunch, DryRunSharesTheCores) {
  const int c = cores();
  for (int n : {1, c, c + 1, 4 * c}) {
    CommandResult r =
        run(kSpore + " launch -n " + std::to_string(n) + " --dry-run -- ./train --epochs 3");
    ASSERT_EQ(r.status, 0) << r.out;
    const int threads = std::max(1, c / n);
    EXPECT_EQ(r.out.rfind("mpirun -np " + std::to_string(n) + " ", 0), 0u) << r.out;
    EXPECT_NE(r.out.find("-x OMP_NUM_THREADS=" + std::to_string(threads) + " "), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("-x SPORE_NUM_THREADS=" + std::to_string(threads) + " "),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("-x OMP_WAIT_POLICY=passive "), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("--oversubscribe") != std::string::npos, n > c) << r.out;
    EXPECT_NE(r.out.find(" ./train --epochs 3\n"), std::string::npos) << r.out;
  }
}

// A real run: every rank sees the variables launch exports (--threads 3, a count the test's own
// environment, which sets 1, cannot have supplied).
TEST(SporeLaunch, RunsTheProgramOnEachRank) {
  CommandResult r = run(
      kSpore + " launch -n 2 --threads 3 --mpirun " MPIEXEC
               " --mpirun-args \"--mca btl self,vader\" -- sh -c "
               "'echo rank=$OMPI_COMM_WORLD_RANK threads=$SPORE_NUM_THREADS omp=$OMP_NUM_THREADS "
               "wait=$OMP_WAIT_POLICY'");
  ASSERT_EQ(r.status, 0) << r.out;
  for (int rank : {0, 1})
    EXPECT_NE(r.out.find("rank=" + std::to_string(rank) + " threads=3 omp=3 wait=passive\n"),
              std::string::npos)
        << r.out;
}

TEST(SporeLaunch, MissingMpirunSaysWhatToInstall) {
  CommandResult r = run(kSpore + " launch -n 2 --mpirun /nonexistent/mpirun -- true");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("openmpi-bin"), std::string::npos) << r.out;
  CommandResult u = run(kSpore + " launch -- true");  // -n is required
  EXPECT_EQ(u.status, 2) << u.out;
}

}  // namespace
