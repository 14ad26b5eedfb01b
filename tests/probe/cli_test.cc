// The spore CLI end to end (when it is built next to the tests), and report show/diff on the
// committed fixtures.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "probe_test_util.h"
#include "spore/backend.h"
#include "spore/op_registry.h"

namespace spore::probe {
namespace {

std::string fixture(const std::string& name) { return std::string(SPORE_SOURCE_DIR) + "/tests/fixtures/probe/" + name; }
std::string cli() { return std::string(SPORE_BINARY_DIR) + "/bin/spore"; }

// Runs the CLI with `args`, output to `log`; returns its exit status.
int run_cli(const std::string& args, const std::string& log) {
  std::string cmd = cli() + " " + args + " > " + log + " 2>&1";
  int st = std::system(cmd.c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(ReportFixtures, ValidateShowAndDiff) {
  Json a = read_json(fixture("run-a.json")), b = read_json(fixture("run-b.json"));
  Json p = read_json(fixture("probe-01_tensor_ops.json"));
  test::expect_valid(a);
  test::expect_valid(b);
  test::expect_valid(p);
  std::string d = diff_reports(a, b);
  EXPECT_NE(d.find("~ 05_autograd_train: blocked -> observed-pass"), std::string::npos) << d;
  EXPECT_NE(d.find("~ 01_tensor_ops max_abs_diff matmul float16 vs CPU float32: 0 -> 0.0078125"), std::string::npos) << d;
  EXPECT_NE(d.find("~ spore_version: 0.1.0 -> 0.2.0"), std::string::npos) << d;
  EXPECT_NE(d.find("+ library /usr/lib/x86_64-linux-gnu/libdnnl.so.3"), std::string::npos) << d;
  EXPECT_NE(diff_reports(a, a).find("no differences"), std::string::npos);
  std::string t = show_report(p);
  EXPECT_NE(t.find("matmul float16 vs CPU float32"), std::string::npos) << t;
  EXPECT_NE(show_report(a).find("05_autograd_train"), std::string::npos);
  EXPECT_THROW(show_report(Json::object()), Error);
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(cli())) GTEST_SKIP() << "the spore CLI is not built in " << SPORE_BINARY_DIR;
  }
};

TEST_F(Cli, UsageErrors) {
  std::string dir = test::temp_dir("cli-usage");
  EXPECT_EQ(run_cli("probe run no_such_probe", dir + "/log"), 2);
  EXPECT_NE(slurp(dir + "/log").find("unknown probe 'no_such_probe'"), std::string::npos);
  EXPECT_EQ(run_cli("probe run --no-such-flag", dir + "/log"), 2);
  EXPECT_EQ(run_cli("probe run check_env --timeout abc", dir + "/log"), 2);
  EXPECT_EQ(run_cli("probe run check_env --device 'cu da' --out " + dir, dir + "/log"), 2);
  EXPECT_EQ(run_cli("report diff /nonexistent " + fixture("run-a.json"), dir + "/log"), 2);
  EXPECT_EQ(run_cli("report diff " + fixture("run-a.json") + " " + fixture("run-b.json"), dir + "/log"), 0);
  EXPECT_NE(slurp(dir + "/log").find("blocked -> observed-pass"), std::string::npos);
}

TEST_F(Cli, EnvWritesAValidReport) {
  std::string dir = test::temp_dir("cli-env");
  ASSERT_EQ(run_cli("env --out " + dir, dir + "/log"), 0) << slurp(dir + "/log");
  Json env = read_json(dir + "/env-report.json");
  test::expect_valid(env);
  EXPECT_EQ(env["binary"]["path"], std::filesystem::canonical(cli()).string());
  EXPECT_NE(slurp(dir + "/log").find("shared libraries actually loaded"), std::string::npos);
}

TEST_F(Cli, SamplesRunAllPassesOrBlocksEverySample) {
  std::string dir = test::temp_dir("cli-samples");
  int rc = run_cli("samples run-all --timeout 60 --out " + dir, dir + "/log");
  std::string log = slurp(dir + "/log");
  std::vector<std::string> runs;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().rfind("board-run-", 0) == 0) runs.push_back(e.path().string());
  ASSERT_EQ(runs.size(), 1u) << log;
  Json run = read_json(runs[0]);
  test::expect_valid(run);
  for (const auto& p : run["paths"]["probe_reports"]) test::expect_valid(read_json(p.get<std::string>()));
  test::expect_valid(read_json(run["paths"]["env_report"].get<std::string>()));
  ASSERT_EQ(run["results"].size(), 8u);
  EXPECT_EQ(run["results"][0]["probe"], "check_env");  // the chapter's order
  // Samples whose parts exist pass on the CPU; the rest are blocked with a reason.
  const bool ops_ready = op_def(OpId::k_add).kernel(kCpuBackend, DType::kFloat32) &&
                         op_def(OpId::k_matmul).kernel(kCpuBackend, DType::kFloat16);
  for (const Json& r : run["results"]) {
    std::string name = r["probe"].get<std::string>(), v = r["verdict"].get<std::string>();
    if (name == "check_env" || name == "01_tensor_ops") {
      if (ops_ready) {
        EXPECT_EQ(v, "observed-pass") << name << ": " << r["reason"];
      }
    } else {
      EXPECT_TRUE(v == "blocked" || v == "observed-pass") << name << ": " << v << " " << r["reason"];
      if (v == "blocked") {
        EXPECT_FALSE(r["reason"].get<std::string>().empty()) << name;
      }
    }
  }
  EXPECT_EQ(rc, run["counts"]["observed-fail"].get<int>() ? 1 : 0) << log;
  EXPECT_NE(log.find("observed-pass"), std::string::npos) << log;
}

TEST_F(Cli, OpMatrixRows) {
  std::string dir = test::temp_dir("cli-ops");
  ASSERT_EQ(run_cli("probe ops --ops add,matmul,sum --timeout 60 --out " + dir, dir + "/log"), 0) << slurp(dir + "/log");
  std::string path;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().rfind("op-matrix-cpu-", 0) == 0) path = e.path().string();
  ASSERT_FALSE(path.empty());
  Json m = read_json(path);
  test::expect_valid(m);
  ASSERT_EQ(m["rows"].size(), 3u);
  for (const Json& row : m["rows"]) {
    ASSERT_EQ(row["cells"].size(), (size_t)kNumDTypes);
    for (const Json& c : row["cells"]) {
      if (c["dtype"] == "float32" && op_def(OpId::k_add).kernel(kCpuBackend, DType::kFloat32)) {
        EXPECT_EQ(c["verdict"], "observed-pass") << row["op"] << ": " << c["reason"];
      }
    }
  }
  EXPECT_EQ(run_cli("probe ops --ops no_such_op --out " + dir, dir + "/log"), 2);
}

}  // namespace
}  // namespace spore::probe
