// Checked access to a tokenizer.json (NOTE [Hostile JSON]): every read names the field it wanted,
// so a malformed file gets a kFormat error such as "model.merges[12]: expected a string".
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "spore/error.h"

namespace spore::nlp::detail {

using Json = nlohmann::json;

[[noreturn]] inline void bad_field(const std::string& source, const std::string& field,
                                   const std::string& what) {
  throw Error(ErrorCode::kFormat, source + ": field '" + field + "' " + what);
}

// Member `key` of object `j`, or nullptr when absent (or null).
inline const Json* member(const Json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

struct Fields {
  std::string source;

  const Json& require(const Json& j, const char* key, const std::string& field) const {
    const Json* m = member(j, key);
    if (!m) bad_field(source, field + "." + key, "is missing");
    return *m;
  }
  std::string string_at(const Json& j, const std::string& field) const {
    if (!j.is_string()) bad_field(source, field, "must be a string, not " + std::string(j.type_name()));
    return j.get<std::string>();
  }
  std::string string(const Json& j, const char* key, const std::string& field) const {
    return string_at(require(j, key, field), field + "." + key);
  }
  std::string string_or(const Json& j, const char* key, const std::string& field,
                        const std::string& fallback) const {
    const Json* m = member(j, key);
    return m ? string_at(*m, field + "." + key) : fallback;
  }
  bool boolean_or(const Json& j, const char* key, const std::string& field, bool fallback) const {
    const Json* m = member(j, key);
    if (!m) return fallback;
    if (!m->is_boolean()) bad_field(source, field + "." + key, "must be true or false");
    return m->get<bool>();
  }
  int64_t integer_at(const Json& j, const std::string& field, int64_t lo, int64_t hi) const {
    if (!j.is_number_integer())
      bad_field(source, field, "must be an integer, not " + std::string(j.type_name()));
    const int64_t v = j.is_number_unsigned() && j.get<uint64_t>() > (uint64_t)INT64_MAX
                          ? INT64_MAX
                          : j.get<int64_t>();
    if (v < lo || v > hi)
      bad_field(source, field,
                "is " + std::to_string(v) + ", outside " + std::to_string(lo) + ".." +
                    std::to_string(hi));
    return v;
  }
  int64_t integer_or(const Json& j, const char* key, const std::string& field, int64_t fallback,
                     int64_t lo, int64_t hi) const {
    const Json* m = member(j, key);
    return m ? integer_at(*m, field + "." + key, lo, hi) : fallback;
  }
  const Json& array(const Json& j, const char* key, const std::string& field) const {
    const Json& a = require(j, key, field);
    if (!a.is_array()) bad_field(source, field + "." + key, "must be an array");
    return a;
  }
  const Json& object(const Json& j, const char* key, const std::string& field) const {
    const Json& o = require(j, key, field);
    if (!o.is_object()) bad_field(source, field + "." + key, "must be an object");
    return o;
  }
};

}  // namespace spore::nlp::detail
