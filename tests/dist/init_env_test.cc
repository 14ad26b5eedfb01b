// dist::init without a launcher: a clear kValue with the `spore launch` line to use.
#include <gtest/gtest.h>

#include <cstdlib>

#include "spore/dist.h"

namespace spore::dist {
namespace {

void clear_launcher_env() {
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK",
                        "PMI_SIZE", "RANK", "WORLD_SIZE"})
    unsetenv(v);
}

std::string init_error() {
  try {
    init();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kValue);
    return e.what();
  }
  return "";
}

TEST(DistInit, NoLauncherNamesTheLaunchLine) {
  clear_launcher_env();
  const std::string msg = init_error();
  EXPECT_NE(msg.find("no launcher environment"), std::string::npos) << msg;
  EXPECT_NE(msg.find("spore launch -n 2 -- "), std::string::npos) << msg;
  EXPECT_NE(msg.find("test_dist"), std::string::npos) << "the line names this program: " << msg;
  EXPECT_FALSE(is_initialized());
  EXPECT_EQ(get_rank(), 0);
  EXPECT_EQ(get_group_size(), 1);
}

TEST(DistInit, TorchrunVariablesWithoutMpirunNameTheirWorldSize) {
  clear_launcher_env();
  setenv("RANK", "1", 1);
  setenv("WORLD_SIZE", "4", 1);
  const std::string msg = init_error();
  EXPECT_NE(msg.find("RANK/WORLD_SIZE"), std::string::npos) << msg;
  EXPECT_NE(msg.find("spore launch -n 4 -- "), std::string::npos) << msg;
  setenv("WORLD_SIZE", "four", 1);
  EXPECT_NE(init_error().find("not an integer"), std::string::npos);
  clear_launcher_env();
}

TEST(DistInit, BadTimeoutIsRefused) {
  clear_launcher_env();
  setenv("SPORE_DIST_TIMEOUT_S", "0", 1);
  EXPECT_NE(init_error().find("SPORE_DIST_TIMEOUT_S"), std::string::npos);
  unsetenv("SPORE_DIST_TIMEOUT_S");
}

}  // namespace
}  // namespace spore::dist
