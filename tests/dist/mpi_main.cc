// main() of the GoogleTest programs that run under mpirun (tests/dist/CMakeLists.txt): every
// rank runs every test; the program fails on all ranks when any rank failed, then shuts MPI down.
#include <gtest/gtest.h>

#include "spore/dist.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  spore::dist::InitOptions options;
  options.timeout = std::chrono::seconds(60);  // SPORE_DIST_TIMEOUT_S overrides
  spore::dist::ProcessGroup& group = spore::dist::init(options);
  if (group.rank() != 0) {
    // One rank's full report is enough; the others print their failures only.
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    struct FailuresOnly : ::testing::EmptyTestEventListener {
      int rank;
      explicit FailuresOnly(int r) : rank(r) {}
      void OnTestPartResult(const ::testing::TestPartResult& r) override {
        if (r.failed())
          std::fprintf(stderr, "[rank %d] %s:%d: %s\n", rank, r.file_name() ? r.file_name() : "?",
                       r.line_number(), r.message());
      }
    };
    listeners.Append(new FailuresOnly(group.rank()));
  }
  int failed = RUN_ALL_TESTS() != 0;
  if (!group.broken()) {
    std::vector<int32_t> f{failed};
    failed = group.all_reduce(spore::Tensor::from_vector(f), spore::dist::ReduceOp::kMax)
                 .to_vector<int32_t>()[0];
  }
  spore::dist::finalize();
  return failed;
}
