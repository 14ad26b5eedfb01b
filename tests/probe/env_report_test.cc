// spore env: the report names the binary, the build, the CPU and the libraries actually loaded.
#include <fstream>

#include "probe_test_util.h"
#include "spore/backend.h"

namespace spore::probe {
namespace {

TEST(EnvReport, CollectsAndValidates) {
  Json env = collect_env({"test_probe"});
  test::expect_valid(env);
  EXPECT_NE(env["binary"]["path"].get<std::string>().find("test_probe"), std::string::npos);
  EXPECT_EQ(env["binary"]["cxx_standard"], "C++20");
  EXPECT_FALSE(env["binary"]["git_commit"].get<std::string>().empty());
  EXPECT_FALSE(env["binary"]["compiler"].get<std::string>().empty());
  EXPECT_GT(env["memory"]["total_bytes"].get<int64_t>(), 0);
  EXPECT_GT(env["cpu"]["usable_cores"].get<int>(), 0);
  EXPECT_FALSE(env["blas"]["version"].get<std::string>().empty());
  if (find_backend("cuda") < 0) {
    EXPECT_EQ(env["cuda"]["status"], "not compiled");
  }
  // Paths, not names: libc is loaded by every process and must show with its full path.
  bool libc = false;
  for (const auto& p : env["shared_libraries"]) {
    std::string s = p.get<std::string>();
    if (s.find("libc.so") != std::string::npos) libc = libc || s[0] == '/';
  }
  EXPECT_TRUE(libc) << env["shared_libraries"].dump();
  EXPECT_EQ(env["command"]["argv"], Json::array({"test_probe"}));
  std::string text = format_env(env);
  EXPECT_NE(text.find("shared libraries actually loaded"), std::string::npos);
  EXPECT_NE(text.find("cuda"), std::string::npos);
}

TEST(EnvReport, Sha256AndTimestamps) {
  EXPECT_EQ(sha256_bytes("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  std::string ts = utc_now_iso8601();
  ASSERT_EQ(ts.size(), 24u) << ts;
  EXPECT_EQ(ts[10], 'T');
  EXPECT_EQ(ts.back(), 'Z');
  EXPECT_THROW(sha256_file("/nonexistent/file"), Error);
}

}  // namespace
}  // namespace spore::probe
