// Figures on screen (NOTE [Figures on screen]): the values table of a probe report, `report show
// --values` for every report kind, and malformed reports shown without a crash.
#include <filesystem>

#include "probe_test_util.h"

namespace spore::probe {
namespace {

std::string fixture(const std::string& name) { return std::string(SPORE_SOURCE_DIR) + "/tests/fixtures/probe/" + name; }

// The lines of `text` that contain `what`.
std::vector<std::string> lines_with(const std::string& text, const std::string& what) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(at, end - at);
    if (line.find(what) != std::string::npos) out.push_back(line);
    at = end + 1;
  }
  return out;
}

TEST(ReportValues, ModeFiguresBecomeOneRowPerMode) {
  Json r = {{"kind", "probe"}, {"probe", "p"}, {"verdict", "observed-pass"}};
  r["results"]["values"] = {{"steps", 200},
                            {"float16: start loss", 1.65},
                            {"float16: end loss", 1e-6},
                            {"float32: start loss", 1.64},
                            {"float32: end loss", 2e-9}};
  const std::string t = format_figures(r);
  auto header = lines_with(t, "start loss");
  ASSERT_EQ(header.size(), 1u) << t;
  EXPECT_NE(header[0].find("mode"), std::string::npos);
  EXPECT_LT(header[0].find("start loss"), header[0].find("end loss"));
  auto f16 = lines_with(t, "float16");
  ASSERT_EQ(f16.size(), 1u) << t;
  EXPECT_NE(f16[0].find("1.65"), std::string::npos);
  EXPECT_NE(f16[0].find("1e-06"), std::string::npos);
  EXPECT_EQ(lines_with(t, "float32")[0].find("1.65"), std::string::npos);
  ASSERT_EQ(lines_with(t, "steps").size(), 1u);
  EXPECT_NE(lines_with(t, "steps")[0].find("200"), std::string::npos);
}

TEST(ReportValues, ComparisonsShowTheirTolerance) {
  const std::string t = show_report_values(read_json(fixture("probe-01_tensor_ops.json")));
  auto line = lines_with(t, "matmul float16 vs CPU float32");
  ASSERT_EQ(line.size(), 1u) << t;
  EXPECT_NE(line[0].find("0.01"), std::string::npos) << line[0];  // its atol
  EXPECT_NE(line[0].find("yes"), std::string::npos) << line[0];
  EXPECT_NE(t.find("tolerance"), std::string::npos);
}

TEST(ReportValues, EveryReportKind) {
  const std::string run = show_report_values(read_json(fixture("run-a.json")));
  EXPECT_NE(run.find("05_autograd_train"), std::string::npos) << run;
  EXPECT_NE(run.find("matmul float16 vs CPU float32"), std::string::npos) << run;
  Json env = {{"kind", "env"}, {"cpu", {{"model", "X"}, {"usable_cores", 2}}}, {"memory", {{"total_bytes", 1024}}}};
  const std::string e = show_report_values(env);
  EXPECT_EQ(lines_with(e, "cpu.usable_cores").size(), 1u) << e;
  EXPECT_NE(lines_with(e, "memory.total_bytes")[0].find("1024"), std::string::npos) << e;
  Json m = {{"kind", "op-matrix"}, {"device", "cpu"}};
  m["rows"] = Json::array({{{"op", "add"}, {"cells", Json::array({{{"dtype", "float32"}, {"verdict", "observed-pass"},
                                                                     {"max_abs_err", 0.5}}})}}});
  EXPECT_EQ(lines_with(show_report_values(m), "add")[0].find("0.5") != std::string::npos, true);
}

// Edited or truncated files: a missing field shows "-", a wrong type never crashes, and what is
// not a report is a format error.
TEST(ReportValues, MalformedReportsAreShownOrRefusedWithoutACrash) {
  EXPECT_NE(show_report_values(Json{{"kind", "probe"}}).find("(no figures recorded)"), std::string::npos);
  Json odd = {{"kind", "probe"}, {"results", {{"values", 3}, {"comparisons", Json::array({1, "x", nullptr})}}},
              {"artifacts", {{"name", 1}}}};
  const std::string t = show_report_values(odd);
  EXPECT_EQ(lines_with(t, "compared").size(), 1u) << t;
  for (const Json& bad : {Json(nullptr), Json::array(), Json{{"kind", 7}}, Json{{"kind", "nosuch"}},
                          Json{{"kind", "run"}}, Json{{"kind", "run"}, {"results", "x"}}, Json{{"kind", "op-matrix"}}}) {
    try {
      show_report_values(bad);
      ADD_FAILURE() << "accepted " << bad.dump();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kFormat) << bad.dump();
    }
  }
  Json run = {{"kind", "run"}, {"results", Json::array({Json::object(), 5, {{"values", {{"a: b", 1}}}}})}};
  EXPECT_NE(show_report_values(run).find("a"), std::string::npos);
}

TEST(ReportValues, TheCliPrintsValues) {
  if (!std::filesystem::exists(test::spore_cli_path())) GTEST_SKIP() << "the spore CLI is not built";
  auto r = test::run_program(test::spore_cli_path() + " report show --values " + fixture("probe-01_tensor_ops.json"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(lines_with(r.output, "matmul float16 vs CPU float32").size(), 1u) << r.output;
  EXPECT_NE(r.output.find("tolerance"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace spore::probe
