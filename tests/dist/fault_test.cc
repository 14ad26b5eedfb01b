// A lost rank ends the job with a clear error within the watchdog's timeout (3 s in
// fault_worker.cc), never a hang: the whole mpirun must be over well inside the limits below.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace {

struct Run {
  int status;
  std::string out;
  double seconds;
};

Run mpirun(int ranks, const std::string& mode) {
  const std::string cmd = std::string("timeout -s KILL 120 " MPIEXEC
                                      " --allow-run-as-root --oversubscribe --mca btl self,vader"
                                      " --mca btl_vader_single_copy_mechanism none -np ") +
                          std::to_string(ranks) + " " FAULT_WORKER " " + mode + " 2>&1";
  const auto start = std::chrono::steady_clock::now();
  Run r{0, "", 0};
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

TEST(DistFaults, StalledRankTripsTheWatchdogOnTheOthers) {
  for (int ranks : {2, 4}) {
    Run r = mpirun(ranks, "stall");
    EXPECT_NE(r.status, 0) << r.out;
    EXPECT_NE(r.status, 137) << "killed by the test's own 120 s limit: the job hung\n" << r.out;
    EXPECT_LT(r.seconds, 40.0) << r.out;  // 3 s watchdog + start-up and abort on a loaded machine
    EXPECT_NE(r.out.find("rank 0: spore::Error: dist: all_reduce #2 on rank 0 of " + std::to_string(ranks) +
                         " did not complete within the watchdog timeout of 3"),
              std::string::npos)
        << r.out;
  }
}

TEST(DistFaults, KilledRankEndsTheJob) {
  for (int ranks : {2, 4}) {
    Run r = mpirun(ranks, "kill");
    EXPECT_NE(r.status, 0) << r.out;
    EXPECT_NE(r.status, 137) << "killed by the test's own 120 s limit: the job hung\n" << r.out;
    EXPECT_LT(r.seconds, 40.0) << r.out;
    EXPECT_EQ(r.out.find("without rank 1"), std::string::npos) << r.out;
    // Either our watchdog or an MPI error on a survivor, or mpirun's own notice of the dead rank.
    const bool explained = r.out.find("spore::Error: dist:") != std::string::npos ||
                           r.out.find("signal 9") != std::string::npos;
    EXPECT_TRUE(explained) << r.out;
  }
}

}  // namespace
