// A validator for the subset of JSON Schema that Spore's report schemas use (schemas/*.json):
// type, required, properties, additionalProperties, items, enum, const, minimum, maximum,
// minItems and local $ref ("#/$defs/NAME"). Debian ships no C++ validator, and this subset
// is all the reports need; a keyword outside it is reported, never silently ignored.
#include <cmath>
#include <set>

#include "probe/json_read.h"
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
  if (t == "integer") {
    if (v.is_number_integer()) return true;
    // Whole floats count as integers; no cast to an integer type, which would overflow.
    const double d = v.is_number_float() ? v.get<double>() : 0.5;
    return std::isfinite(d) && std::floor(d) == d;
  }
  return false;
}

// NOTE [Hostile JSON]: both the document and the schema come from files, so the validator reads
// every keyword through checked access and reports a malformed keyword instead of throwing.
// Recursion is bounded: documents are at most kMaxJsonDepth deep (parse_json), and a chain of
// $refs that does not descend into the document stops at kMaxSteps. A schema whose $refs branch
// (a definition that refers to itself twice) costs exponential time at depth, so the total work
// is bounded too: kChecksPerValue per value of the document, far above what Spore's schemas need
// (a value is checked against a handful of subschemas).
struct Validator {
  static constexpr int kMaxSteps = 4 * kMaxJsonDepth;
  static constexpr int64_t kChecksPerValue = 64;
  const Json& root;
  int64_t max_checks;
  std::vector<std::string> errors;
  int64_t checks = 0;

  void fail(const std::string& at, const std::string& what) { errors.push_back((at.empty() ? "/" : at) + ": " + what); }

  const Json* resolve(const Json& ref_field, const std::string& at) {
    const std::string pre = "#/$defs/";
    const std::string ref = detail::string_or(ref_field);
    if (ref.rfind(pre, 0) != 0) {
      fail(at, "unsupported $ref " + ref_field.dump().substr(0, 60) + " (only \"#/$defs/NAME\")");
      return nullptr;
    }
    std::string name = ref.substr(pre.size());
    const Json& defs = detail::members(detail::field(root, "$defs"));
    if (!defs.contains(name)) {
      fail(at, "$ref to a missing definition '" + name + "'");
      return nullptr;
    }
    return &defs[name];
  }

  // The number a numeric keyword holds; false after reporting a keyword that is not a number.
  bool keyword_number(const Json& s, const char* key, const std::string& at, double& out) {
    const Json& k = detail::field(s, key);
    if (k.is_number()) {
      out = k.get<double>();
      return true;
    }
    fail(at, std::string("schema keyword '") + key + "' must be a number, got " + k.dump().substr(0, 60));
    return false;
  }

  void check(const Json& v, const Json& s, const std::string& at, int depth = 0) {
    if (depth > kMaxSteps) return fail(at, "schema nests too deeply (a $ref cycle?)");
    if (++checks > max_checks) {
      if (checks == max_checks + 1)
        fail(at, "validation stopped after " + std::to_string(max_checks) + " checks (do the schema's $refs branch?)");
      return;
    }
    if (s.is_boolean()) {
      if (!s.get<bool>()) fail(at, "no value is allowed here");
      return;
    }
    if (!s.is_object()) return fail(at, "schema is not an object");
    for (const auto& [k, _] : s.items())
      if (!kKnown.count(k)) fail(at, "schema keyword '" + k + "' is outside the supported subset");
    if (s.contains("$ref")) {
      if (const Json* t = resolve(s["$ref"], at)) check(v, *t, at, depth + 1);
    }
    if (s.contains("type")) {
      const Json& t = s["type"];
      bool ok = false;
      std::string names;
      if (t.is_string()) {
        ok = has_type(v, t.get<std::string>());
        names = t.get<std::string>();
      } else {
        if (!t.is_array()) return fail(at, "schema keyword 'type' must be a string or a list of strings");
        for (const Json& x : t) {
          if (!x.is_string()) return fail(at, "schema keyword 'type' lists " + x.dump().substr(0, 60) + ", not a type name");
          ok = ok || has_type(v, x.get<std::string>());
          if (!names.empty()) names += " or ";
          names += x.get<std::string>();
        }
      }
      if (!ok) return fail(at, "expected " + names + ", got " + std::string(v.type_name()) + " " + v.dump().substr(0, 60));
    }
    if (s.contains("enum")) {
      bool ok = false;
      for (const Json& e : detail::elements(s["enum"])) ok = ok || e == v;
      if (!ok) fail(at, "value " + v.dump().substr(0, 60) + " is not one of " + s["enum"].dump().substr(0, 200));
    }
    if (s.contains("const") && s["const"] != v)
      fail(at, "value " + v.dump().substr(0, 60) + " must be " + s["const"].dump().substr(0, 60));
    if (v.is_number()) {
      double limit = 0;
      if (s.contains("minimum") && keyword_number(s, "minimum", at, limit) && v.get<double>() < limit)
        fail(at, "value " + v.dump() + " is below the minimum " + s["minimum"].dump());
      if (s.contains("maximum") && keyword_number(s, "maximum", at, limit) && v.get<double>() > limit)
        fail(at, "value " + v.dump() + " is above the maximum " + s["maximum"].dump());
    }
    if (v.is_object()) {
      if (s.contains("required"))
        for (const Json& r : detail::elements(s["required"])) {
          if (!r.is_string()) {
            fail(at, "schema keyword 'required' lists " + r.dump().substr(0, 60) + ", not a property name");
          } else if (!v.contains(r.get<std::string>())) {
            fail(at, "missing required property '" + r.get<std::string>() + "'");
          }
        }
      const Json& props = detail::members(detail::field(s, "properties"));
      for (const auto& [k, x] : v.items()) {
        std::string sub = at + "/" + k;
        if (props.contains(k)) {
          check(x, props[k], sub, depth + 1);
        } else if (s.contains("additionalProperties")) {
          check(x, s["additionalProperties"], sub, depth + 1);
        }
      }
    }
    if (v.is_array()) {
      double min_items = 0;
      if (s.contains("minItems") && keyword_number(s, "minItems", at, min_items) && (double)v.size() < min_items)
        fail(at, "needs at least " + s["minItems"].dump() + " items, has " + std::to_string(v.size()));
      if (s.contains("items"))
        for (size_t i = 0; i < v.size(); ++i) check(v[i], s["items"], at + "/" + std::to_string(i), depth + 1);
    }
  }
};

// The number of values in a document, counted without recursion.
int64_t count_values(const Json& doc) {
  int64_t n = 0;
  std::vector<const Json*> todo{&doc};
  while (!todo.empty()) {
    const Json* j = todo.back();
    todo.pop_back();
    ++n;
    if (j->is_structured())
      for (const Json& c : *j) todo.push_back(&c);
  }
  return n;
}
}  // namespace

std::vector<std::string> validate_schema(const Json& doc, const Json& schema) {
  Validator val{schema, Validator::kChecksPerValue * count_values(doc) + 4096, {}};
  val.check(doc, schema, "");
  return val.errors;
}

}  // namespace spore::probe
