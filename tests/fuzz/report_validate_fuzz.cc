// libFuzzer target: report JSON through `spore report validate` (parse_json, schema_path_for,
// validate_schema in src/probe/probe_schema.cc): the input as a report against every committed
// schema, and the input as a schema over small fixed documents (the schema reader is outside
// input too: `--schemas` names any directory).
#include <string_view>
#include <vector>

#include "fuzz_util.h"
#include "spore/error.h"
#include "spore/probe/report.h"

namespace {
using spore::probe::Json;

const std::vector<Json>& committed_schemas() {
  static const std::vector<Json> schemas = [] {
    std::vector<Json> s;
    for (const char* name : {"env-report", "probe-report", "run-report", "op-matrix"})
      s.push_back(spore::probe::read_json(std::string(SPORE_SOURCE_DIR) + "/schemas/" + name + ".schema.json"));
    return s;
  }();
  return schemas;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spore;
  static const std::vector<Json> documents = {
      Json(nullptr), Json(1.5), Json("x"), Json::parse(R"({"a": [1, {"b": [true, null]}], "kind": "run"})")};
  try {
    Json doc = probe::parse_json(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
    try {
      (void)probe::schema_path_for(doc, "schemas");
    } catch (const Error&) {
    }
    for (const Json& schema : committed_schemas()) (void)probe::validate_schema(doc, schema);
    for (const Json& d : documents) (void)probe::validate_schema(d, doc);
  } catch (const Error&) {
  }
  return 0;
}
