// The command line a person meets (NOTE [A command line that helps]): unknown words named with a
// suggestion, --version, and an example line in every command's --help.
#include <cctype>
#include <filesystem>
#include <sstream>

#include "probe_test_util.h"

namespace spore::probe {
namespace {

using test::run_program;

class CliUsage : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(test::spore_cli_path())) GTEST_SKIP() << "the spore CLI is not built";
  }
  static test::ProgramRun spore(const std::string& args) { return run_program(test::spore_cli_path() + " " + args); }
};

TEST_F(CliUsage, AnUnknownSubcommandIsNamedWithTheValidOnes) {
  auto r = spore("frobnicate");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("unknown subcommand 'frobnicate'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("valid subcommands: env, probe, samples, report"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("did you mean"), std::string::npos) << r.output;  // nothing is close

  r = spore("sampels run-all");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("unknown subcommand 'sampels'; did you mean 'samples'?"), std::string::npos) << r.output;
  r = spore("report shwo x.json");  // one level down
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("spore report: unknown subcommand 'shwo'; did you mean 'show'?"), std::string::npos)
      << r.output;
}

TEST_F(CliUsage, AnUnknownOptionIsNamedWithASuggestion) {
  auto r = spore("probe run check_env --timout 5");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("spore probe run: unknown option '--timout'; did you mean '--timeout'?"), std::string::npos)
      << r.output;
  // An option's value is not taken for a subcommand or an option.
  r = spore("samples run-all --out /nonexistent/dir --devcie cpu");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("unknown option '--devcie'; did you mean '--device'?"), std::string::npos) << r.output;
  // Errors of another kind keep CLI11's message.
  r = spore("probe run check_env --timeout abc");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.output.find("unknown"), std::string::npos) << r.output;
}

TEST_F(CliUsage, AMissingSubcommandListsTheChoices) {
  auto r = spore("report");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("spore report: a subcommand is required: show, diff, validate"), std::string::npos)
      << r.output;
}

TEST_F(CliUsage, VersionNamesVersionCommitAndBuildType) {
  auto r = spore("--version");
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string want = "spore " + spore_version() + " (commit " + spore_git_commit() + ", " + spore_build_type() +
                           " build)";
  EXPECT_EQ(r.output.substr(0, r.output.find('\n')), want);
}

// Every command, found by walking the "Subcommands:" sections of --help, has an example line.
TEST_F(CliUsage, EveryCommandsHelpHasAnExample) {
  std::vector<std::string> todo = {""}, seen;
  // A subcommand entry: two spaces, a lower-case name of [a-z0-9-], then white space.
  auto entry = [](const std::string& line) -> std::string {
    if (line.size() < 4 || line.compare(0, 2, "  ") != 0 || line[2] < 'a' || line[2] > 'z') return "";
    size_t e = 2;
    while (e < line.size() && (std::islower((unsigned char)line[e]) || std::isdigit((unsigned char)line[e]) || line[e] == '-')) ++e;
    return e < line.size() && std::isspace((unsigned char)line[e]) ? line.substr(2, e - 2) : "";
  };
  while (!todo.empty()) {
    const std::string path = todo.back();
    todo.pop_back();
    seen.push_back(path);
    auto r = spore(path + " --help");
    ASSERT_EQ(r.status, 0) << path << ": " << r.output;
    EXPECT_NE(r.output.find("Example: spore"), std::string::npos) << "`spore " << path << " --help` has no example";
    std::istringstream in(r.output.substr(std::min(r.output.size(), r.output.find("Subcommands:"))));
    std::string line;
    while (std::getline(in, line)) {
      const std::string name = entry(line);
      if (!name.empty()) todo.push_back(path.empty() ? name : path + " " + name);
    }
  }
  EXPECT_GE(seen.size(), 12u);  // spore, env, probe (3), samples (2), report (3) and the groups
}

}  // namespace
}  // namespace spore::probe
