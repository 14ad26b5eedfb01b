// A validator for the subset of JSON Schema that Spore's report schemas use (schemas/*.json):
// type, required, properties, additionalProperties, items, enum, const, minimum, maximum,
// minItems and local $ref ("#/$defs/NAME"). Debian ships no C++ validator, and this subset
// is all the reports need; a keyword outside it is reported, never silently ignored.
#include <set>

#include "spore/probe/report.h"

namespace spore::probe {

namespace {
const std::set<std::string> kKnown = {"$schema", "$id", "$defs", "$ref", "$comment", "title", "description",
                                      "type", "required", "properties", "additionalProperties", "items",
                                      "enum", "const", "minimum", "maximum", "minItems", "default", "examples"};

bool has_type(const Json& v, const std::string& t) {
  if (t == "null") return v.is_null();
  if (t == "boolean") return v.is_boolean();
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "string") return v.is_string();
  if (t == "number") return v.is_number();
  if (t == "integer") return v.is_number_integer() || (v.is_number_float() && v.get<double>() == (double)(long long)v.get<double>());
  return false;
}

struct Validator {
  const Json& root;
  std::vector<std::string> errors;

  void fail(const std::string& at, const std::string& what) { errors.push_back((at.empty() ? "/" : at) + ": " + what); }

  const Json* resolve(const std::string& ref, const std::string& at) {
    const std::string pre = "#/$defs/";
    if (ref.rfind(pre, 0) != 0) {
      fail(at, "unsupported $ref '" + ref + "' (only #/$defs/NAME)");
      return nullptr;
    }
    std::string name = ref.substr(pre.size());
    if (!root.contains("$defs") || !root["$defs"].contains(name)) {
      fail(at, "$ref to a missing definition '" + name + "'");
      return nullptr;
    }
    return &root["$defs"][name];
  }

  void check(const Json& v, const Json& s, const std::string& at, int depth = 0) {
    if (depth > 64) return fail(at, "schema nests too deeply (a $ref cycle?)");
    if (s.is_boolean()) {
      if (!s.get<bool>()) fail(at, "no value is allowed here");
      return;
    }
    if (!s.is_object()) return fail(at, "schema is not an object");
    for (const auto& [k, _] : s.items())
      if (!kKnown.count(k)) fail(at, "schema keyword '" + k + "' is outside the supported subset");
    if (s.contains("$ref")) {
      if (const Json* t = resolve(s["$ref"].get<std::string>(), at)) check(v, *t, at, depth + 1);
    }
    if (s.contains("type")) {
      const Json& t = s["type"];
      bool ok = false;
      std::string names;
      if (t.is_string()) {
        ok = has_type(v, t.get<std::string>());
        names = t.get<std::string>();
      } else {
        for (const Json& x : t) {
          ok = ok || has_type(v, x.get<std::string>());
          names += (names.empty() ? "" : " or ") + x.get<std::string>();
        }
      }
      if (!ok) return fail(at, "expected " + names + ", got " + std::string(v.type_name()) + " " + v.dump().substr(0, 60));
    }
    if (s.contains("enum")) {
      bool ok = false;
      for (const Json& e : s["enum"]) ok = ok || e == v;
      if (!ok) fail(at, "value " + v.dump().substr(0, 60) + " is not one of " + s["enum"].dump());
    }
    if (s.contains("const") && s["const"] != v)
      fail(at, "value " + v.dump().substr(0, 60) + " must be " + s["const"].dump());
    if (v.is_number()) {
      if (s.contains("minimum") && v.get<double>() < s["minimum"].get<double>())
        fail(at, "value " + v.dump() + " is below the minimum " + s["minimum"].dump());
      if (s.contains("maximum") && v.get<double>() > s["maximum"].get<double>())
        fail(at, "value " + v.dump() + " is above the maximum " + s["maximum"].dump());
    }
    if (v.is_object()) {
      if (s.contains("required"))
        for (const Json& r : s["required"])
          if (!v.contains(r.get<std::string>())) fail(at, "missing required property '" + r.get<std::string>() + "'");
      const Json* props = s.contains("properties") ? &s["properties"] : nullptr;
      for (const auto& [k, x] : v.items()) {
        std::string sub = at + "/" + k;
        if (props && props->contains(k)) {
          check(x, (*props)[k], sub, depth + 1);
        } else if (s.contains("additionalProperties")) {
          check(x, s["additionalProperties"], sub, depth + 1);
        }
      }
    }
    if (v.is_array()) {
      if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>())
        fail(at, "needs at least " + s["minItems"].dump() + " items, has " + std::to_string(v.size()));
      if (s.contains("items"))
        for (size_t i = 0; i < v.size(); ++i) check(v[i], s["items"], at + "/" + std::to_string(i), depth + 1);
    }
  }
};
}  // namespace

std::vector<std::string> validate_schema(const Json& doc, const Json& schema) {
  Validator val{schema, {}};
  val.check(doc, schema, "");
  return val.errors;
}

}  // namespace spore::probe
