// A lost rank ends the job with a clear error within the watchdog's timeout (3 s, set here and in
// fault_worker.cc), never a hang: the whole mpirun must be over well inside the limits below.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "dist/run_command.h"

namespace {

using spore::dist::test::CommandResult;

CommandResult mpirun(int ranks, const std::string& mode) {
  return spore::dist::test::run_command(
      std::string("env SPORE_DIST_TIMEOUT_S=3 timeout -k 5 120 " MPIEXEC
                  " --allow-run-as-root --oversubscribe --mca btl self,vader"
                  " --mca btl_vader_single_copy_mechanism none -np ") +
      std::to_string(ranks) + " " FAULT_WORKER " " + mode);
}

TEST(DistFaults, StalledRankTripsTheWatchdogOnTheOthers) {
  for (int ranks : {2, 4}) {
    CommandResult r = mpirun(ranks, "stall");
    EXPECT_NE(r.status, 0) << r.out;
    EXPECT_NE(r.status, 124) << "stopped by the test's own 120 s limit: the job hung\n" << r.out;
    EXPECT_LT(r.seconds, 40.0) << r.out;  // 3 s watchdog + start-up and abort on a loaded machine
    // Any surviving rank may be the first to report (and its abort can end the others first).
    // With the order check on (debug and sanitized builds) the wait that times out is the
    // check's own exchange before the call: "dist: the order check of all_reduce #2 on rank ...".
    // A blocking all_reduce runs MPI_Allreduce on the calling thread (NOTE [The caller runs its
    // own all-reduce]), which cannot come back from MPI to raise the timeout: the all-reduce
    // thread's watchdog says the same words and ends the job instead.
    const size_t at = r.out.find("all_reduce #2 on rank ");
    ASSERT_NE(at, std::string::npos) << r.out;
    const size_t line = r.out.rfind('\n', at);
    const size_t from = line == std::string::npos ? 0 : line;
    const size_t error = std::min(r.out.find(": spore::Error: [spore io error] dist: ", from),
                                  r.out.find(": dist watchdog, ending the job: dist: ", from));
    EXPECT_LT(error, at) << r.out;
    EXPECT_NE(r.out.find(" of " + std::to_string(ranks) +
                             " did not complete within the watchdog timeout of 3",
                         at),
              std::string::npos)
        << r.out;
    EXPECT_EQ(r.out.find("on rank 1 of"), std::string::npos) << "rank 1 never called it\n" << r.out;
  }
}

TEST(DistFaults, KilledRankEndsTheJob) {
  for (int ranks : {2, 4}) {
    CommandResult r = mpirun(ranks, "kill");
    EXPECT_NE(r.status, 0) << r.out;
    EXPECT_NE(r.status, 124) << "stopped by the test's own 120 s limit: the job hung\n" << r.out;
    EXPECT_LT(r.seconds, 40.0) << r.out;
    EXPECT_EQ(r.out.find("without rank 1"), std::string::npos) << r.out;
    // Either our watchdog or an MPI error on a survivor, or mpirun's own notice of the dead rank.
    const bool explained = r.out.find("spore::Error: dist:") != std::string::npos ||
                           r.out.find("signal 9") != std::string::npos;
    EXPECT_TRUE(explained) << r.out;
  }
}

}  // namespace
