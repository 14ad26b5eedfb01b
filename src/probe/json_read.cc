// Checked JSON access and the depth-bounded parser (NOTE [Hostile JSON] in docs/design.md).
#include "probe/json_read.h"

#include "io/json_depth.h"
#include "spore/error.h"
#include "spore/probe/report.h"

namespace spore::probe {

namespace detail {

const Json& null_json() {
  static const Json kNull;
  return kNull;
}

const Json& field(const Json& j, const char* key) {
  if (!j.is_object()) return null_json();
  auto it = j.find(key);
  return it == j.end() ? null_json() : *it;
}

const Json& field(const Json& j, const std::string& key) { return field(j, key.c_str()); }

const Json& elements(const Json& j) {
  static const Json kEmpty = Json::array();
  return j.is_array() ? j : kEmpty;
}

const Json& members(const Json& j) {
  static const Json kEmpty = Json::object();
  return j.is_object() ? j : kEmpty;
}

std::string string_or(const Json& j, const std::string& fallback) {
  return j.is_string() ? j.get<std::string>() : fallback;
}

double number_or(const Json& j, double fallback) {
  return j.is_number() ? j.get<double>() : fallback;
}

bool is_true(const Json& j) { return j.is_boolean() && j.get<bool>(); }

}  // namespace detail

Json parse_json(std::string_view text, const std::string& what) {
  // The one depth bound (io/json_depth.h): dump(), the schema validator and every other walk
  // over the result recurse.
  try {
    return io::parse_json_bounded<Json>(text);
  } catch (const io::JsonTooDeep&) {
    throw Error(ErrorCode::kFormat, what + " nests objects and arrays deeper than " + std::to_string(kMaxJsonDepth) +
                                        " levels; no Spore report does, so it is refused");
  } catch (const Json::exception& e) {
    throw Error(ErrorCode::kFormat, what + " is not JSON: " + e.what());
  }
}

}  // namespace spore::probe
