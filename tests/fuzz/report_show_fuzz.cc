// libFuzzer target: report JSON through `spore report show` and `report diff`'s readers
// (parse_json, show_report, diff_reports in src/probe/probe_report.cc, env.cc, op_matrix.cc).
#include <string_view>

#include "fuzz_util.h"
#include "spore/error.h"
#include "spore/probe/report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spore;
  try {
    probe::Json doc = probe::parse_json(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
    try {
      (void)probe::show_report(doc);
    } catch (const Error&) {
    }
    (void)probe::diff_reports(doc, doc);
  } catch (const Error&) {
  }
  return 0;
}
