// One `spore serve` child per GoogleTest suite: each suite names its flags once, and the start,
// the health wait, the clean-exit check at the end and the skip without a model are shared.
#pragma once
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <string>
#include <vector>

#include "serve/raw_http.h"
#include "serve/serve_test_util.h"

namespace spore::test {

// `Suite` is the deriving fixture itself, so every suite gets its own pid and port (static
// members of a class template are per instantiation). A suite defines
//   static void SetUpTestSuite() { start_suite({...flags after --port...}); }
template <class Suite>
class ServeSuite : public ::testing::Test {
 protected:
  static inline pid_t pid = -1;
  static inline int port = 0;

  // Starts `spore serve --model <the model> --port <free> <flags>` and waits for /health.
  static void start_suite(const std::vector<std::string>& flags) {
    if (!have_model()) return;
    port = free_port();
    std::vector<std::string> args = {"--model", model_path().string(), "--port", std::to_string(port)};
    args.insert(args.end(), flags.begin(), flags.end());
    pid = start_serve(args);
    if (!wait_until_healthy(port, 60)) ADD_FAILURE() << "spore serve did not become healthy in 60 s";
  }
  static void TearDownTestSuite() {
    if (pid > 0) {
      const int status = stop_serve(pid);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "spore serve did not stop cleanly: " << status;
      pid = -1;
    }
  }
  void SetUp() override {
    if (!have_model()) GTEST_SKIP() << "no model at " << model_path() << " (scripts/fetch-model.sh fetches it)";
  }
};

}  // namespace spore::test
