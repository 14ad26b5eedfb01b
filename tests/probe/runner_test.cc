// The harness classifies what children do: crashes, hangs, silence, garbage, shape-only claims,
// and real evidence (NOTE [Probe isolation], NOTE [Evidence rule]).
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "probe_test_util.h"
#include "spore/backend.h"
#include "spore/error.h"

namespace spore::probe {
namespace {

// ---- the test probes ---------------------------------------------------------------------------
void crash(ProbeContext&) {
  // The default action, even under ASan (whose interceptors would keep its own handler): set
  // through the raw system call. No core file in the test's directory.
  rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  struct {
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)();
    unsigned long mask;
  } dfl{SIG_DFL, 0, nullptr, 0};
  syscall(SYS_rt_sigaction, SIGSEGV, &dfl, nullptr, sizeof(unsigned long));
  raise(SIGSEGV);
}
void hang(ProbeContext&) {
  for (;;) pause();
}
void silent(ProbeContext&) {
  std::fflush(nullptr);
  _exit(0);
}
void garbage(ProbeContext&) {
  const char junk[] = "this is not JSON {";
  ssize_t n = write(kResultFd, junk, sizeof junk - 1);
  (void)n;
  _exit(0);
}
void shape_only(ProbeContext& ctx) {
  Tensor t = Tensor::from_vector<float>({1, 2, 3, 4}, Shape{2, 2});
  ctx.shape("result", t.shape());  // the chapter's false pass: a shape, no values
}
// Claims a pass in raw JSON, bypassing ProbeContext: the parent must refuse it.
void liar(ProbeContext&) {
  std::string s = R"({"probe":"t_liar","status":"ran","verdict":"observed-pass","comparisons":[],)"
                  R"("artifacts":[],"shapes":[{"what":"y","shape":[2,2]}],"values":{}})";
  ssize_t n = write(kResultFd, s.data(), s.size());
  (void)n;
  _exit(0);
}
void good(ProbeContext& ctx) {
  Tensor t = Tensor::from_vector<float>({1.5f, -2.0f, 3.25f}, Shape{3}, ctx.device());
  ctx.compare("values copied back", t, {1.5, -2.0, 3.25}, 0);
  ctx.value("latency_ms", 1.25);
}
void off_by_a_bit(ProbeContext& ctx) {
  Tensor t = Tensor::from_vector<float>({1.0f, 2.0f}, Shape{2}, ctx.device());
  ctx.compare("values", t, {1.0, 2.5}, 1e-3);
}
void blocked(ProbeContext& ctx) { ctx.block("needs a part that is not built"); }
void throws(ProbeContext&) { throw Error(ErrorCode::kDType, "matmul: no float32 kernel on device 'x'"); }
void cuda_only(ProbeContext& ctx) {
  Tensor t = Tensor::from_vector<float>({1}, Shape{1}, ctx.device());
  ctx.compare("one", t, {1}, 0);
}
void with_artifact(ProbeContext& ctx) {
  std::string path = std::string(SPORE_BINARY_DIR) + "/test-outputs/artifact.bin";
  std::filesystem::create_directories(std::string(SPORE_BINARY_DIR) + "/test-outputs");
  FILE* f = std::fopen(path.c_str(), "wb");
  std::fputs("abc", f);
  std::fclose(f);
  ctx.artifact("artifact.bin", path, "r1");
  ctx.alignment("artifact.bin", 0.0);
}

SPORE_REGISTER_PROBE({"t_crash", "test", "raises SIGSEGV", "", &crash});
SPORE_REGISTER_PROBE({"t_hang", "test", "never returns", "", &hang});
SPORE_REGISTER_PROBE({"t_silent", "test", "exits 0 without a result", "", &silent});
SPORE_REGISTER_PROBE({"t_garbage", "test", "writes garbage instead of JSON", "", &garbage});
SPORE_REGISTER_PROBE({"t_shape_only", "test", "only looks at a shape", "", &shape_only});
SPORE_REGISTER_PROBE({"t_liar", "test", "claims a pass in raw JSON", "", &liar});
SPORE_REGISTER_PROBE({"t_good", "test", "compares retrieved values", "", &good});
SPORE_REGISTER_PROBE({"t_off", "test", "values outside tolerance", "", &off_by_a_bit});
SPORE_REGISTER_PROBE({"t_blocked", "test", "missing prerequisite", "", &blocked});
SPORE_REGISTER_PROBE({"t_throws", "test", "throws a spore::Error", "", &throws});
SPORE_REGISTER_PROBE({"t_cuda_only", "test", "needs the CUDA backend", "cuda", &cuda_only});
SPORE_REGISTER_PROBE({"t_artifact", "test", "hashes an artifact and aligns it", "", &with_artifact});

}  // namespace
}  // namespace spore::probe

// The child side: the runner re-executes this binary with a filter selecting this test.
TEST(ProbeChildEntry, Run) {
  int rc = spore::probe::child_main_from_env();
  if (rc < 0) GTEST_SKIP() << "runs only as a probe child";
  std::fflush(nullptr);
  std::_Exit(rc);
}

namespace spore::probe {
namespace {
using test::child_options;

Json run1(const std::string& name, double timeout_s = 20) {
  Json r = run_probe_isolated(name, child_options(timeout_s));
  test::expect_valid(r);
  return r;
}
std::string reason(const Json& r) { return r["reason"].get<std::string>(); }

TEST(ProbeRunner, CrashIsObservedFailWithTheSignal) {
  Json r = run1("t_crash");
  EXPECT_EQ(r["verdict"], "observed-fail");
  EXPECT_EQ(r["results"]["process"]["exit_code"], -11);
  EXPECT_EQ(r["results"]["process"]["signal"], "SIGSEGV");
  EXPECT_NE(reason(r).find("SIGSEGV (-11)"), std::string::npos) << reason(r);
}

TEST(ProbeRunner, HangIsKilledAtTheTimeout) {
  Json r = run1("t_hang", 1.0);
  EXPECT_EQ(r["verdict"], "observed-fail");
  EXPECT_TRUE(r["results"]["process"]["timed_out"].get<bool>());
  EXPECT_EQ(r["results"]["process"]["exit_code"], -SIGKILL);
  EXPECT_NE(reason(r).find("timed out after 1 s"), std::string::npos) << reason(r);
  EXPECT_LT(r["duration_ms"].get<double>(), 5000);
}

TEST(ProbeRunner, SilentExitIsObservedFail) {
  Json r = run1("t_silent");
  EXPECT_EQ(r["verdict"], "observed-fail");
  EXPECT_EQ(r["results"]["process"]["exit_code"], 0);
  EXPECT_NE(reason(r).find("exited with code 0 without a result"), std::string::npos) << reason(r);
}

TEST(ProbeRunner, GarbageIsAMalformedResult) {
  Json r = run1("t_garbage");
  EXPECT_EQ(r["verdict"], "observed-fail");
  EXPECT_NE(reason(r).find("malformed result (not JSON)"), std::string::npos) << reason(r);
}

TEST(ProbeRunner, ShapeOnlyIsRefusedAsEvidence) {
  Json r = run1("t_shape_only");
  EXPECT_EQ(r["verdict"], "observed-fail");
  EXPECT_NE(reason(r).find("only shapes were checked"), std::string::npos) << reason(r);
  EXPECT_EQ(r["results"]["shapes"].size(), 1u);
}

TEST(ProbeRunner, ParentJudgesAgainAChildThatClaimsAPass) {
  Json r = run1("t_liar");
  EXPECT_EQ(r["verdict"], "observed-fail");
  EXPECT_NE(reason(r).find("refused as evidence"), std::string::npos) << reason(r);
}

TEST(ProbeRunner, RetrievedValuesWithinToleranceAreAPass) {
  Json r = run1("t_good");
  EXPECT_EQ(r["verdict"], "observed-pass") << reason(r);
  EXPECT_EQ(r["device_ran"], Json::array({"cpu"}));
  const Json& c = r["results"]["comparisons"][0];
  EXPECT_EQ(c["max_abs_diff"], 0.0);
  EXPECT_EQ(c["values"], Json::array({1.5, -2.0, 3.25}));
  EXPECT_EQ(r["results"]["values"]["latency_ms"], 1.25);
  EXPECT_EQ(r["results"]["process"]["exit_code"], 0);
}

TEST(ProbeRunner, ValuesOutsideToleranceFail) {
  Json r = run1("t_off");
  EXPECT_EQ(r["verdict"], "observed-fail");
  EXPECT_EQ(r["results"]["comparisons"][0]["max_abs_diff"], 0.5);
}

TEST(ProbeRunner, BlockedAndErrors) {
  Json b = run1("t_blocked");
  EXPECT_EQ(b["verdict"], "blocked");
  EXPECT_EQ(reason(b), "needs a part that is not built");
  Json e = run1("t_throws");
  EXPECT_EQ(e["verdict"], "observed-fail");
  EXPECT_NE(reason(e).find("matmul: no float32 kernel"), std::string::npos) << reason(e);
}

TEST(ProbeRunner, MissingCudaIsBlockedNotAFailure) {
  Json r = run1("t_cuda_only");
  EXPECT_EQ(r["device_requested"], "cuda:0");
  if (find_backend("cuda") >= 0) GTEST_SKIP() << "this build has CUDA";
  EXPECT_EQ(r["verdict"], "blocked");
  EXPECT_NE(reason(r).find("not compiled with CUDA"), std::string::npos) << reason(r);
  // The same for any probe asked to run on an absent device.
  RunOptions o = child_options();
  o.device = "cuda:1";
  Json g = run_probe_isolated("t_good", o);
  EXPECT_EQ(g["verdict"], "blocked");
}

TEST(ProbeRunner, ArtifactHashWithAlignmentIsEvidence) {
  Json r = run1("t_artifact");
  EXPECT_EQ(r["verdict"], "observed-pass") << reason(r);
  ASSERT_EQ(r["artifacts"].size(), 1u);
  EXPECT_EQ(r["artifacts"][0]["bytes"], 3);
  EXPECT_EQ(r["artifacts"][0]["sha256"], "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(ProbeRunner, UnknownNamesAndBadDevicesAreUsageErrors) {
  try {
    run_probes({"no_such_probe"}, child_options(), {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kValue);
    EXPECT_NE(std::string(e.what()).find("no_such_probe"), std::string::npos);
  }
  RunOptions o = child_options();
  o.device = "cu da";
  EXPECT_THROW(run_probes({"t_good"}, o, {}), Error);
}

TEST(ProbeRunner, RunContinuesAfterFailuresAndWritesValidReports) {
  RunOptions o = child_options(1.0);
  o.write_reports = true;
  o.out_dir = test::temp_dir("run");
  RunSummary s = run_probes({"t_crash", "t_good", "t_hang", "t_blocked"}, o, {"test", "run"});
  EXPECT_EQ(s.passed, 1);
  EXPECT_EQ(s.failed, 2);
  EXPECT_EQ(s.blocked, 1);
  ASSERT_EQ(s.probe_reports.size(), 4u);
  test::expect_valid(read_json(s.run_report_path));
  test::expect_valid(read_json(s.env_report_path));
  for (const auto& p : s.run_report["paths"]["probe_reports"]) {
    Json rep = read_json(p.get<std::string>());
    test::expect_valid(rep);
    EXPECT_EQ(rep["paths"]["run_report"], s.run_report_path);
  }
  std::string table = show_report(s.run_report);
  EXPECT_NE(table.find("t_crash"), std::string::npos);
  EXPECT_NE(table.find("1 observed-pass, 2 observed-fail, 1 blocked"), std::string::npos) << table;
}

}  // namespace
}  // namespace spore::probe
