// The training examples, run as a user runs them (the programs the build puts in bin/), with
// their documented options: each must reach its stated result.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace {

struct ProgramRun {
  int status = -1;
  std::string output;
};

ProgramRun run(const std::string& command) {
  ProgramRun r;
  std::FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  r.status = pclose(p);
  return r;
}

double number_after(const std::string& text, const std::string& key) {
  size_t at = text.rfind(key);
  return at == std::string::npos ? -1 : std::stod(text.substr(at + key.size()));
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
}

// A number where one is needed: a typo in an option is an error, not a silent default.
TEST(Examples, AutogradTrainRejectsABadOption) {
  ProgramRun r = run(kBin + "/chapter5/05_autograd_train --steps many");
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("--steps needs a number"), std::string::npos) << r.output;
}

}  // namespace
