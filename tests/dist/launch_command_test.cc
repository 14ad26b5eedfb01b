// `spore launch`: the mpirun line it builds (--dry-run), a real 2-rank run, and a missing mpirun.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace {

struct Run {
  int status;
  std::string out;
};
Run run(const std::string& cmd) {
  Run r{0, ""};
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
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
    Run r = run(kSpore + " launch -n " + std::to_string(n) + " --dry-run -- ./train --epochs 3");
    ASSERT_EQ(r.status, 0) << r.out;
    const int threads = std::max(1, c / n);
    EXPECT_EQ(r.out.rfind("mpirun -np " + std::to_string(n) + " ", 0), 0u) << r.out;
    EXPECT_NE(r.out.find("-x OMP_NUM_THREADS=" + std::to_string(threads) + " "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("-x SPORE_NUM_THREADS=" + std::to_string(threads) + " "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("-x OMP_WAIT_POLICY=passive "), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("--oversubscribe") != std::string::npos, n > c) << r.out;
    EXPECT_NE(r.out.find(" ./train --epochs 3\n"), std::string::npos) << r.out;
  }
}

TEST(SporeLaunch, RunsTheProgramOnEachRank) {
  Run r = run(kSpore + " launch -n 2 --mpirun " MPIEXEC " --mpirun-arg=--mca --mpirun-arg=btl --mpirun-arg=self,vader"
                       " -- printenv OMPI_COMM_WORLD_RANK SPORE_NUM_THREADS");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("0\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(std::to_string(std::max(1, cores() / 2)) + "\n"), std::string::npos) << r.out;
}

TEST(SporeLaunch, MissingMpirunSaysWhatToInstall) {
  Run r = run(kSpore + " launch -n 2 --mpirun /nonexistent/mpirun -- true");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("openmpi-bin"), std::string::npos) << r.out;
  Run u = run(kSpore + " launch -- true");  // -n is required
  EXPECT_EQ(u.status, 2) << u.out;
}

}  // namespace
