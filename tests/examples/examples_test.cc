// The training examples, run as a user runs them (the programs the build puts in bin/), with
// their documented options: each must reach its stated result.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "probe/probe_test_util.h"

namespace {

using spore::probe::test::ProgramRun;
ProgramRun run(const std::string& command) { return spore::probe::test::run_program(command); }

double number_after(const std::string& text, const std::string& key) {
  size_t at = text.rfind(key);
  return at == std::string::npos ? -1 : std::stod(text.substr(at + key.size()));
}

// The cells of the first line of `text` starting with `prefix`, split at runs of two or more
// spaces (how the figures tables separate columns).
std::vector<std::string> table_row(const std::string& text, const std::string& prefix) {
  size_t at = text.find("\n" + prefix);
  if (at == std::string::npos) return {};
  std::string line = text.substr(at + 1, text.find('\n', at + 1) - at - 1);
  std::vector<std::string> cells;
  size_t i = line.find_first_not_of(' ');
  while (i != std::string::npos && i < line.size()) {
    size_t gap = line.find("  ", i);
    cells.push_back(line.substr(i, gap == std::string::npos ? std::string::npos : gap - i));
    i = gap == std::string::npos ? gap : line.find_first_not_of(' ', gap);
  }
  return cells;
}
size_t column(const std::vector<std::string>& header, const std::string& name) {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return i;
  return header.size();
}

const std::string kBin = std::string(SPORE_BINARY_DIR) + "/bin";

// The digits CNN reaches its stated test accuracy (95 %) with its default options; the program's
// own exit status says so, and the printed figure is checked here too.
TEST(Examples, DigitsCnnReachesNinetyFivePercent) {
  ProgramRun r = run(kBin + "/examples/digits_cnn --curve " + testing::TempDir() + "digits_curve");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_GE(number_after(r.output, "test accuracy "), 0.95) << r.output;
  EXPECT_NE(r.output.find("done: 900 steps"), std::string::npos) << r.output;  // the progress summary
}

// The chapter's command line: start and end loss reported, every variant below 1e-5.
TEST(Examples, AutogradTrainSampleEndsBelowOneInHundredThousand) {
  ProgramRun r = run(kBin + "/chapter5/05_autograd_train --steps 200 --lr 0.05 --out " + testing::TempDir());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("observed-pass"), std::string::npos) << r.output;
  // The figures on screen (NOTE [Figures on screen]): a row per mode, the loss from ~1.65 down.
  const auto header = table_row(r.output, "    mode  ");
  const size_t start = column(header, "start loss"), end = column(header, "end loss (float64, host)");
  ASSERT_LT(end, header.size()) << r.output;
  for (const char* mode : {"float16 parameters", "float32 parameters", "to_float(float16) over float32 masters"}) {
    const auto row = table_row(r.output, std::string("    ") + mode + "  ");
    ASSERT_EQ(row.size(), header.size()) << mode << "\n" << r.output;
    EXPECT_NEAR(std::stod(row[start]), 1.65, 0.1) << mode;
    EXPECT_LT(std::stod(row[end]), 1e-5) << mode;
  }
}

// A number where one is needed: a typo in an option is an error, not a silent default.
TEST(Examples, AutogradTrainRejectsABadOption) {
  ProgramRun r = run(kBin + "/chapter5/05_autograd_train --steps many");
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("--steps needs a number"), std::string::npos) << r.output;
}

}  // namespace
