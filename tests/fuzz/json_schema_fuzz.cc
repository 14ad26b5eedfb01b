// libFuzzer target: JSON Schema -> GBNF (src/nlp/grammar/json_schema.cc, regex_to_gbnf.cc).
// Input: the schema's JSON text.
//
// Contract checked: a schema either translates or throws kValue; what it translates to always
// compiles as GBNF (a translation the parser refuses is a bug in the translator), within bounded
// time and memory.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "spore/error.h"
#include "spore/nlp/grammar.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spore;
  const std::string in(reinterpret_cast<const char*>(data), size);
  nlp::JsonSchemaOptions o;
  o.max_depth = 16;
  o.max_grammar_bytes = 1 << 16;
  std::string gbnf;
  try {
    gbnf = nlp::json_schema_to_gbnf(in, o);
  } catch (const Error& e) {
    fuzz::require(e.code() == ErrorCode::kValue, "a bad schema throws kValue");
    return 0;
  }
  try {
    nlp::Grammar::from_gbnf(gbnf);
  } catch (const Error& e) {
    // Only the limits may refuse a translation (the schema asked for a huge grammar).
    const std::string what = e.what();
    fuzz::require(e.code() == ErrorCode::kValue && (what.find("more than") != std::string::npos ||
                                                    what.find("limit") != std::string::npos ||
                                                    what.find("parses are alive") != std::string::npos),
                  "the translation of a schema compiles");
  }
  return 0;
}
