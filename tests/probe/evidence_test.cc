// NOTE [Evidence rule] on hand-made results, and the schema validator on hand-made documents.
#include "probe_test_util.h"
#include "spore/error.h"

namespace spore::probe {
namespace {

Json base(const std::string& device = "cpu") {
  return Json{{"probe", "p"}, {"device_requested", device}, {"status", "ran"}, {"reason", ""},
              {"comparisons", Json::array()}, {"artifacts", Json::array()}, {"shapes", Json::array()},
              {"values", Json::object()}};
}
Json comparison(const std::string& device, double diff, bool within) {
  return Json{{"what", "y"}, {"device", device}, {"count", 4}, {"max_abs_diff", diff}, {"within_tolerance", within}};
}

TEST(Evidence, NoEvidenceIsNoPass) {
  std::string why;
  EXPECT_EQ(judge(base(), &why), Verdict::kObservedFail);
  EXPECT_NE(why.find("no evidence"), std::string::npos);
  Json r = base();
  r["shapes"].push_back(Json{{"what", "y"}, {"shape", {2, 2}}});
  EXPECT_EQ(judge(r, &why), Verdict::kObservedFail);
  EXPECT_NE(why.find("only shapes"), std::string::npos);
}

TEST(Evidence, ComparedValuesPass) {
  Json r = base();
  r["comparisons"].push_back(comparison("cpu", 1e-7, true));
  EXPECT_EQ(judge(r, nullptr), Verdict::kObservedPass);
  r["comparisons"].push_back(comparison("cpu", 0.5, false));
  EXPECT_EQ(judge(r, nullptr), Verdict::kObservedFail);
}

TEST(Evidence, AFallbackToAnotherDeviceNeverPasses) {
  Json r = base("cuda:0");
  r["comparisons"].push_back(comparison("cpu", 0, true));
  std::string why;
  EXPECT_EQ(judge(r, &why), Verdict::kObservedFail);
  EXPECT_NE(why.find("ran on cpu, not on the requested cuda:0"), std::string::npos) << why;
}

TEST(Evidence, ArtifactsNeedAHashAndAnAlignment) {
  Json r = base();
  Json a = {{"name", "net.ckpt"}, {"sha256", std::string(64, 'a')}, {"alignment", nullptr}};
  r["artifacts"].push_back(a);
  EXPECT_EQ(judge(r, nullptr), Verdict::kObservedFail);  // a hash alone is context
  r["artifacts"][0]["alignment"] = Json{{"max_abs_error", 0.0}, {"tolerance", 0.0}, {"within_tolerance", true}};
  EXPECT_EQ(judge(r, nullptr), Verdict::kObservedPass);
  r["artifacts"][0]["alignment"] = Json{{"max_abs_error", 0.1}, {"tolerance", 0.0}, {"within_tolerance", false}};
  EXPECT_EQ(judge(r, nullptr), Verdict::kObservedFail);
}

TEST(Evidence, StatusesAndMalformedResults) {
  Json r = base();
  r["status"] = "blocked";
  r["reason"] = "no device";
  std::string why;
  EXPECT_EQ(judge(r, &why), Verdict::kBlocked);
  EXPECT_EQ(why, "no device");
  EXPECT_EQ(judge(Json::array(), nullptr), Verdict::kObservedFail);
  r["status"] = "passed!";
  EXPECT_EQ(judge(r, nullptr), Verdict::kObservedFail);
  EXPECT_STREQ(verdict_name(verdict_from_name("not-run")), "not-run");
  EXPECT_THROW(verdict_from_name("unsupported"), Error);
}

TEST(Evidence, ContextRecordsAndStops) {
  ProbeContext ctx("p", Device::cpu(), "cpu");
  EXPECT_TRUE(ctx.compare_values("v", {1, 2}, {1, 2.0005}, 1e-3, 0, "cpu"));
  EXPECT_FALSE(ctx.compare_values("w", {1}, {1, 2}, 1, 0, "cpu"));  // lengths differ
  EXPECT_THROW(ctx.alignment("missing", 0), Error);
  EXPECT_THROW(ctx.block("why"), ProbeStop);
  EXPECT_EQ(ctx.result()["status"], "blocked");
  EXPECT_EQ(ctx.result()["comparisons"].size(), 2u);
}

TEST(Evidence, HostValuesReadStridedViews) {
  Tensor t = Tensor::from_vector<int32_t>({0, 1, 2, 3, 4, 5}, Shape{2, 3});
  Tensor tt = Tensor::view_of(t.storage(), 0, Shape{3, 2}, Shape{1, 3}, DType::kInt32);
  EXPECT_EQ(host_values(tt), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  Tensor h = Tensor::from_vector<Half>({Half(0.5f), Half(-2.f)}, Shape{2});
  EXPECT_EQ(host_values(h), (std::vector<double>{0.5, -2}));
}

// ---- the schema validator ----------------------------------------------------------------------
TEST(Schema, ValidatorCatchesEachKeyword) {
  Json s = Json::parse(R"({
    "type": "object", "required": ["a", "b"], "additionalProperties": false,
    "properties": {
      "a": {"type": "integer", "minimum": 0, "maximum": 9},
      "b": {"$ref": "#/$defs/v"},
      "c": {"type": "array", "items": {"type": ["string", "null"]}, "minItems": 1},
      "d": {"const": "x"}
    },
    "$defs": {"v": {"enum": ["observed-pass", "blocked"]}}})");
  EXPECT_TRUE(validate_schema(Json::parse(R"({"a": 3, "b": "blocked", "c": ["s", null], "d": "x"})"), s).empty());
  auto errs = [&](const char* doc) { return validate_schema(Json::parse(doc), s); };
  EXPECT_EQ(errs(R"({"a": 3})").size(), 1u);                        // required
  EXPECT_EQ(errs(R"({"a": -1, "b": "blocked"})").size(), 1u);       // minimum
  EXPECT_EQ(errs(R"({"a": 10, "b": "blocked"})").size(), 1u);       // maximum
  EXPECT_EQ(errs(R"({"a": 1.5, "b": "blocked"})").size(), 1u);      // type integer
  EXPECT_EQ(errs(R"({"a": 1, "b": "passed"})").size(), 1u);         // enum through $ref
  EXPECT_EQ(errs(R"({"a": 1, "b": "blocked", "e": 0})").size(), 1u);  // additionalProperties
  EXPECT_EQ(errs(R"({"a": 1, "b": "blocked", "c": [1]})").size(), 1u);  // items
  EXPECT_EQ(errs(R"({"a": 1, "b": "blocked", "c": []})").size(), 1u);   // minItems
  EXPECT_EQ(errs(R"({"a": 1, "b": "blocked", "d": "y"})").size(), 1u);  // const
  auto e = errs(R"({"a": 1, "b": "blocked", "e": 0})");
  EXPECT_NE(e[0].find("/e"), std::string::npos) << e[0];
  // A keyword outside the subset is reported, not ignored.
  EXPECT_FALSE(validate_schema(Json(1), Json::parse(R"({"pattern": "x"})")).empty());
}

TEST(Schema, EverySchemaFileParsesAndUsesOnlyTheSubset) {
  for (const char* name : {"env-report", "probe-report", "run-report", "op-matrix"}) {
    Json s = read_json(test::schema_dir() + "/" + name + ".schema.json");
    // Validating an empty object exercises the top level; the keyword check covers the rest.
    auto errors = validate_schema(Json::object(), s);
    for (const auto& e : errors) EXPECT_EQ(e.find("outside the supported subset"), std::string::npos) << name << ": " << e;
    EXPECT_FALSE(errors.empty()) << name << ": required properties must be reported";
  }
}

}  // namespace
}  // namespace spore::probe
