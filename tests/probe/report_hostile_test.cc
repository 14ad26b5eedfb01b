// Issue 15, finding 2: report readers and the schema validator on malformed and deeply nested
// JSON (NOTE [Hostile JSON]). Every case must print or return errors, never crash or throw
// anything but spore::Error; the CLI must exit non-zero with a message.
#include <sys/wait.h>

#include <cstdlib>
#include <functional>
#include <filesystem>
#include <fstream>

#include "probe_test_util.h"

namespace spore::probe {
namespace {

std::string nested(int depth, const std::string& inner = "1") {
  return std::string((size_t)depth, '[') + inner + std::string((size_t)depth, ']');
}

void expect_format_error(const std::function<void()>& fn, const std::string& part) {
  try {
    fn();
    ADD_FAILURE() << "expected a kFormat error containing '" << part << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFormat) << e.what();
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(ReportHostile, MissingMembersPrintAsDashes) {
  // The issue's 31-byte file crashed show_run; {"kind":"probe"} gave a message about a number.
  std::string run = show_report(parse_json(R"({"kind":"run","environment":{}})", "t"));
  EXPECT_NE(run.find("run - on - (spore -, commit -, -)"), std::string::npos) << run;
  std::string probe = show_report(parse_json(R"({"kind":"probe"})", "t"));
  EXPECT_NE(probe.find("probe - [-] on -: -"), std::string::npos) << probe;
  // Members of the wrong type are read as absent, not thrown on.
  std::string odd = show_report(parse_json(
      R"({"kind":"probe","results":{"process":[],"comparisons":{"a":1},"values":[1]},"artifacts":"x",
          "environment":7,"paths":{"report":3}})", "t"));
  EXPECT_NE(odd.find("process    exit -"), std::string::npos) << odd;
  EXPECT_FALSE(show_report(parse_json(R"({"kind":"env","binary":{"sanitize":"yes"},"cpu":[]})", "t")).empty());
  EXPECT_FALSE(show_report(parse_json(R"({"kind":"op-matrix","rows":[{"cells":[5,{"verdict":1}]},2]})", "t")).empty());
  EXPECT_FALSE(diff_reports(parse_json(R"({"kind":"run","results":[1,{"max_abs_diff":[]}]})", "t"),
                            parse_json(R"({"kind":"probe","environment":[1]})", "t"))
                   .empty());
}

TEST(ReportHostile, NotAReportIsAFormatError) {
  expect_format_error([] { show_report(parse_json(R"({"kind":5})", "t")); }, "kind");
  expect_format_error([] { show_report(parse_json("[1, 2]", "t")); }, "kind");
  expect_format_error([] { show_report(parse_json(R"({"kind":"nope"})", "t")); }, "unknown report kind");
  expect_format_error([] { diff_reports(parse_json("3", "t"), parse_json("{}", "t")); }, "Spore reports");
  expect_format_error([] { parse_json("{\"kind\": ", "'cut.json'"); }, "'cut.json' is not JSON");
}

TEST(ReportHostile, NestingIsBoundedBeforeAnyWalk) {
  EXPECT_NO_THROW(parse_json(nested(kMaxJsonDepth), "t"));
  expect_format_error([] { parse_json(nested(kMaxJsonDepth + 1), "'deep.json'"); }, "deeper than 64");
  // The issue's case: a valid report with a value nested 70,000 arrays deep.
  const std::string deep = R"({"kind":"probe","results":{"values":{"v":)" + nested(70000) + "}}}";
  expect_format_error([&] { parse_json(deep, "'deep.json'"); }, "'deep.json' nests");
}

TEST(ReportHostile, MalformedSchemaKeywordsAreReportedNotThrown) {
  const Json doc = parse_json(R"({"a": [1, 2], "n": 3})", "doc");
  for (const char* schema : {R"({"type": 5})", R"({"type": [1, "object"]})", R"({"$ref": 3})",
                             R"({"required": [1, "a"]})", R"({"properties": 4, "additionalProperties": {"minimum": "x"}})",
                             R"({"properties": {"a": {"minItems": "two", "items": {"maximum": []}}}})",
                             R"({"$ref": "#/$defs/x", "$defs": 1})", R"({"enum": 3})"}) {
    std::vector<std::string> errors;
    EXPECT_NO_THROW(errors = validate_schema(doc, parse_json(schema, "schema"))) << schema;
    EXPECT_FALSE(errors.empty()) << schema;
  }
  // Whole floats are integers; huge ones must not overflow a cast.
  EXPECT_TRUE(validate_schema(parse_json("1e300", "d"), parse_json(R"({"type":"integer"})", "s")).empty());
  EXPECT_FALSE(validate_schema(parse_json("1.5", "d"), parse_json(R"({"type":"integer"})", "s")).empty());
}

TEST(ReportHostile, BranchingRefsStopAtTheWorkBound) {
  // Each level refers to itself twice: without a bound this is 2^256 checks.
  const Json schema = parse_json(
      R"({"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a", "items": {"$ref": "#/$defs/a"}}}})", "s");
  auto errors = validate_schema(parse_json(nested(20), "d"), schema);
  bool stopped = false;
  for (const auto& e : errors) stopped = stopped || e.find("validation stopped") != std::string::npos;
  EXPECT_TRUE(stopped);
}

// The CLI: `report show` and `report validate` exit 1 with a message on each malformed file.
TEST(ReportHostile, CliExitsWithAMessage) {
  const std::string cli = std::string(SPORE_BINARY_DIR) + "/bin/spore";
  if (!std::filesystem::exists(cli)) GTEST_SKIP() << "the spore CLI is not built in " << SPORE_BINARY_DIR;
  const std::string dir = test::temp_dir("report-hostile");
  const std::pair<const char*, std::string> files[] = {
      {"not_json.json", "{\"kind\": "},
      {"deep.json", R"({"schema":"spore.probe-report/1","kind":"probe","v":)" + nested(70000) + "}"},
      {"no_schema.json", R"({"kind":5})"},
      {"array.json", "[]"},
  };
  for (const auto& [name, text] : files) {
    const std::string path = dir + "/" + name;
    std::ofstream(path) << text;
    for (const char* cmd : {"report show ", "report validate --schemas " SPORE_SOURCE_DIR "/schemas "}) {
      const std::string log = dir + "/log.txt";
      int st = std::system((cli + " " + cmd + path + " > " + log + " 2>&1").c_str());
      ASSERT_TRUE(WIFEXITED(st)) << cmd << name << " died by a signal";
      EXPECT_EQ(WEXITSTATUS(st), 1) << cmd << name;
      std::ifstream in(log);
      std::string out((std::istreambuf_iterator<char>(in)), {});
      EXPECT_NE(out.find("spore: "), std::string::npos) << cmd << name << ": " << out;
    }
  }
  // The issue's crashing file now shows, exit 0.
  std::ofstream(dir + "/run.json") << R"({"kind":"run","environment":{}})";
  EXPECT_EQ(std::system((cli + " report show " + dir + "/run.json > /dev/null 2>&1").c_str()), 0);
}

}  // namespace
}  // namespace spore::probe
