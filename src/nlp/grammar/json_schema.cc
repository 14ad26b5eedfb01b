// JSON Schema -> GBNF (NOTE [Grammars]). The keywords are those OpenAI's structured outputs
// accept (draft 2020-12): type (one or a list), properties, required, additionalProperties, enum,
// const, anyOf (oneOf read as anyOf), allOf of one schema, items, prefixItems, minItems, maxItems,
// minLength, maxLength, pattern, format (date, time, date-time, uuid, email), minimum, maximum,
// exclusiveMinimum, exclusiveMaximum, $ref to #, #/$defs/..., #/definitions/...
// The grammar generates a subset of the schema's instances, always valid ones: properties in the
// schema's order, no properties beyond the declared ones when it declares some, compact
// whitespace, a bounded number's integers only. A keyword that constrains instances in a way this
// does not model is refused with kValue rather than ignored, so an output never fails its schema.
#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "nlp/grammar/gbnf_text.h"
#include "spore/error.h"
#include "spore/nlp/grammar.h"

namespace spore::nlp {

namespace {

using json = nlohmann::ordered_json;
using detail::gbnf_literal;

const char* kPrimitives = R"(space ::= | " "
value ::= object | array | string | number | boolean | null
object ::= "{" space ( string ":" space value ("," space string ":" space value)* )? "}" space
array ::= "[" space ( value ("," space value)* )? "]" space
string ::= "\"" char* "\"" space
char ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
number ::= "-"? integral ("." [0-9]{1,15})? ([eE] [-+]? [0-9]{1,2})? space
integer ::= "-"? integral space
integral ::= [0] | [1-9] [0-9]{0,15}
boolean ::= ("true" | "false") space
null ::= "null" space
)";

// Annotations and keywords that do not constrain instances.
const std::set<std::string> kIgnored = {"$schema", "$id", "$comment", "title", "description", "default", "examples",
                                        "deprecated", "readOnly", "writeOnly", "$defs", "definitions", "strict",
                                        "contentMediaType", "contentEncoding", "$anchor"};

// Decimal digits of a non-negative integer, for integer ranges.
std::string digits(uint64_t v) { return std::to_string(v); }

// GBNF for the decimal numbers in [a, b], both with the same number of digits.
std::string same_length_range(const std::string& a, const std::string& b) {
  if (a.size() == 1) return a == b ? "\"" + a + "\"" : "[" + a + "-" + b + "]";
  if (a[0] == b[0]) return "\"" + std::string(1, a[0]) + "\" (" + same_length_range(a.substr(1), b.substr(1)) + ")";
  const size_t rest = a.size() - 1;
  std::vector<std::string> alts;
  alts.push_back("\"" + std::string(1, a[0]) + "\" (" + same_length_range(a.substr(1), std::string(rest, '9')) + ")");
  if (b[0] - a[0] > 1)
    alts.push_back("[" + std::string(1, (char)(a[0] + 1)) + "-" + std::string(1, (char)(b[0] - 1)) + "] [0-9]{" +
                   std::to_string(rest) + "}");
  alts.push_back("\"" + std::string(1, b[0]) + "\" (" + same_length_range(std::string(rest, '0'), b.substr(1)) + ")");
  std::string out;
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out;
}

// GBNF for the integers in [lo, hi] (0 <= lo <= hi), without leading zeros.
std::string natural_range(uint64_t lo, uint64_t hi) {
  std::vector<std::string> alts;
  const std::string sh = digits(hi);
  for (size_t len = digits(lo).size(); len <= sh.size(); ++len) {
    const uint64_t first = len == 1 ? 0 : (uint64_t)std::pow(10.0, (double)(len - 1));
    const uint64_t last = len >= 20 ? std::numeric_limits<uint64_t>::max() : (uint64_t)std::pow(10.0, (double)len) - 1;
    const uint64_t a = std::max(lo, first), b = std::min(hi, last);
    if (a > b) continue;
    // append, not "x" + a temporary: GCC 12 warns falsely there (-Wrestrict, GCC bug 105329).
    alts.push_back(std::string(1, '(').append(same_length_range(digits(a), digits(b))).append(1, ')'));
  }
  std::string out;
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out;
}

class Converter {
 public:
  Converter(const json& root, const JsonSchemaOptions& o, std::string prefix) : root_(root), o_(o), prefix_(std::move(prefix)) {}

  std::string run() {
    const std::string top = visit(root_, "", 0);
    std::string out = prefix_ + "root ::= " + top + "\n";
    for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
    // The shared primitives, renamed with the prefix.
    std::string prims = kPrimitives;
    if (!prefix_.empty()) {
      for (const char* n : {"space", "value", "object", "array", "string", "char", "number", "integer", "integral",
                            "boolean", "null"}) {
        std::string renamed;
        const std::string name = n;
        for (size_t i = 0; i < prims.size();) {
          const bool boundary_before = i == 0 || !(std::isalnum((unsigned char)prims[i - 1]) || prims[i - 1] == '-' || prims[i - 1] == '\\' || prims[i - 1] == '"');
          if (boundary_before && prims.compare(i, name.size(), name) == 0 &&
              (i + name.size() >= prims.size() || !(std::isalnum((unsigned char)prims[i + name.size()]) || prims[i + name.size()] == '-'))) {
            renamed += prefix_ + name;
            i += name.size();
          } else {
            renamed += prims[i++];
          }
        }
        prims = renamed;
      }
    }
    out += prims;
    if (out.size() > o_.max_grammar_bytes)
      throw Error(ErrorCode::kValue, "json_schema: the schema translates to a grammar of more than " +
                                         std::to_string(o_.max_grammar_bytes) + " bytes; simplify it");
    return out;
  }

 private:
  [[noreturn]] static void fail(const std::string& where, const std::string& what) {
    throw Error(ErrorCode::kValue, "json_schema: at '" + (where.empty() ? std::string("#") : where) + "': " + what);
  }

  std::string p(const std::string& name) const { return prefix_ + name; }

  std::string new_rule(const std::string& hint, const std::string& body) {
    std::string clean;
    for (char c : hint) clean.push_back(std::isalnum((unsigned char)c) ? c : '-');
    if (clean.size() > 40) clean.resize(40);
    const std::string name = prefix_ + "s" + std::to_string(rules_.size()) + (clean.empty() ? "" : "-" + clean);
    rules_.emplace_back(name, body);
    if (rules_.size() > 100000) fail("", "the schema needs more than 100000 rules; simplify it");
    return name;
  }

  std::string literal_value(const json& v) { return gbnf_literal(v.dump()) + " " + p("space"); }

  std::string string_rule(const json& s, const std::string& at) {
    if (auto f = s.find("format"); f != s.end()) {
      if (!f->is_string()) fail(at + "/format", "expected a string");
      const std::string fmt = f->get<std::string>();
      const std::string d2 = "[0-9] [0-9]";
      const std::string date = "[0-9]{4} \"-\" ((\"0\" [13578] | \"1\" [02]) \"-\" (\"0\" [1-9] | [12] [0-9] | \"3\" [01]) | "
                               "(\"0\" [469] | \"11\") \"-\" (\"0\" [1-9] | [12] [0-9] | \"30\") | "
                               "\"02-\" (\"0\" [1-9] | \"1\" [0-9] | \"2\" [0-8]))";
      const std::string time = "([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9] (\".\" [0-9]{1,6})? "
                               "(\"Z\" | [+-] ([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9])";
      std::string body;
      if (fmt == "date") body = date;
      else if (fmt == "time") body = time;
      else if (fmt == "date-time") body = date + " \"T\" " + time;
      else if (fmt == "uuid") body = "[0-9a-f]{8} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{12}";
      else if (fmt == "email")
        body = "[a-zA-Z0-9_+-]{1,32} (\".\" [a-zA-Z0-9_+-]{1,32}){0,3} \"@\" [a-zA-Z0-9]{1,32} (\".\" [a-zA-Z]{2,16}){1,3}";
      else fail(at + "/format", "the format '" + fmt + "' is not supported; use date, time, date-time, uuid or email");
      (void)d2;
      return "\"\\\"\" " + body + " \"\\\"\" " + p("space");
    }
    if (auto pat = s.find("pattern"); pat != s.end()) {
      if (!pat->is_string()) fail(at + "/pattern", "expected a string");
      std::string body;
      try {
        body = detail::regex_to_gbnf(pat->get<std::string>());
      } catch (const Error& e) {
        fail(at + "/pattern", e.what());
      }
      if (s.contains("minLength") || s.contains("maxLength")) fail(at, "pattern with minLength/maxLength is not supported");
      return "\"\\\"\" (" + body + ") \"\\\"\" " + p("space");
    }
    int64_t lo = 0, hi = o_.default_max_string_chars > 0 ? o_.default_max_string_chars : -1;
    if (auto v = s.find("minLength"); v != s.end()) {
      if (!v->is_number_unsigned() || v->get<uint64_t>() > 1000) fail(at + "/minLength", "expected an integer in [0, 1000]");
      lo = v->get<int64_t>();
    }
    if (auto v = s.find("maxLength"); v != s.end()) {
      if (!v->is_number_unsigned() || v->get<uint64_t>() > 1000) fail(at + "/maxLength", "expected an integer in [0, 1000]");
      hi = v->get<int64_t>();
    }
    if (hi >= 0 && hi < lo) {
      if (s.contains("maxLength")) fail(at, "maxLength is below minLength: no string fits");
      hi = lo + o_.default_max_string_chars;
    }
    if (lo == 0 && hi < 0) return p("string");
    return "\"\\\"\" " + p("char") + "{" + std::to_string(lo) + "," + (hi >= 0 ? std::to_string(hi) : "") + "} \"\\\"\" " +
           p("space");
  }

  std::string number_rule(const json& s, const std::string& at, bool integer) {
    const bool bounded = s.contains("minimum") || s.contains("maximum") || s.contains("exclusiveMinimum") ||
                         s.contains("exclusiveMaximum");
    if (!bounded) return p(integer ? "integer" : "number");
    // Integers within the bounds (for "number" too: they are numbers, and a range of them is
    // exact in a grammar).
    const double big = 1e15;
    double lo = -big, hi = big;
    auto bound = [&](const char* key, bool lower, bool exclusive) {
      auto v = s.find(key);
      if (v == s.end()) return;
      if (!v->is_number()) fail(at + "/" + key, "expected a number");
      const double x = v->get<double>();
      if (!std::isfinite(x) || std::fabs(x) > big) fail(at + "/" + key, "out of the supported range +-1e15");
      if (lower) lo = std::max(lo, exclusive ? std::floor(x) + 1 : std::ceil(x));
      else hi = std::min(hi, exclusive ? std::ceil(x) - 1 : std::floor(x));
    };
    bound("minimum", true, false);
    bound("exclusiveMinimum", true, true);
    bound("maximum", false, false);
    bound("exclusiveMaximum", false, true);
    if (lo > hi) fail(at, "no integer lies within minimum/maximum, and this server generates bounded numbers as integers");
    std::vector<std::string> alts;
    const int64_t l = (int64_t)lo, h = (int64_t)hi;
    if (l < 0) alts.push_back("\"-\" (" + natural_range((uint64_t)std::max<int64_t>(1, -h), (uint64_t)-l) + ")");
    if (h >= 0) alts.push_back("(" + natural_range((uint64_t)std::max<int64_t>(0, l), (uint64_t)h) + ")");
    std::string body = "(";
    for (size_t i = 0; i < alts.size(); ++i) body += (i ? " | " : "") + alts[i];
    return body + ") " + p("space");
  }

  std::string object_rule(const json& s, const std::string& at, int depth) {
    std::vector<std::pair<std::string, std::string>> props;  // key literal, value rule
    std::vector<bool> required;
    std::set<std::string> req;
    if (auto r = s.find("required"); r != s.end()) {
      if (!r->is_array()) fail(at + "/required", "expected a list of property names");
      for (const json& x : *r) {
        if (!x.is_string()) fail(at + "/required", "expected a list of property names");
        req.insert(x.get<std::string>());
      }
    }
    if (auto pr = s.find("properties"); pr != s.end()) {
      if (!pr->is_object()) fail(at + "/properties", "expected an object");
      for (const auto& [k, v] : pr->items()) {
        props.emplace_back(gbnf_literal(json(k).dump()) + " " + p("space") + " \":\" " + p("space"),
                           visit(v, at + "/properties/" + k, depth + 1));
        required.push_back(req.count(k) > 0);
        req.erase(k);
      }
    }
    if (!req.empty()) fail(at + "/required", "'" + *req.begin() + "' is required but not in properties");
    auto ap = s.find("additionalProperties");
    if (props.empty()) {
      // No declared properties: any keys, values under additionalProperties (any when absent).
      if (ap != s.end() && ap->is_boolean() && !ap->get<bool>()) return "\"{\" " + p("space") + " \"}\" " + p("space");
      const std::string v = ap == s.end() || ap->is_boolean() ? p("value") : visit(*ap, at + "/additionalProperties", depth + 1);
      const std::string kv = p("string") + " \":\" " + p("space") + " " + v;
      return "\"{\" " + p("space") + " (" + kv + " (\",\" " + p("space") + " " + kv + ")*)? \"}\" " + p("space");
    }
    // Declared properties in order; optional ones may be left out. tail(i, first) is the text
    // for properties i.. when `first` says nothing has been written yet (so no comma before).
    const size_t n = props.size();
    std::vector<std::string> tail_first(n + 1), tail_more(n + 1);
    tail_first[n] = tail_more[n] = "";
    for (size_t i = n; i-- > 0;) {
      const std::string kv = props[i].first + " " + props[i].second;
      for (bool first : {true, false}) {
        const std::string after = tail_more[i + 1].empty() ? "" : " " + tail_more[i + 1];
        std::string body = (first ? "" : "\",\" " + p("space") + " ") + kv + after;
        if (!required[i]) {
          const std::string skip = first ? tail_first[i + 1] : tail_more[i + 1];
          body = "(" + body + ")" + (skip.empty() ? "?" : " | " + skip);
          if (!skip.empty()) body = "(" + body + ")";
        }
        (first ? tail_first[i] : tail_more[i]) = new_rule("obj", body);
      }
    }
    return "\"{\" " + p("space") + " " + tail_first[0] + " \"}\" " + p("space");
  }

  std::string array_rule(const json& s, const std::string& at, int depth) {
    auto count = [&](const char* key, int64_t dflt) {
      auto v = s.find(key);
      if (v == s.end()) return dflt;
      if (!v->is_number_unsigned() || v->get<uint64_t>() > 1000) fail(at + "/" + key, "expected an integer in [0, 1000]");
      return v->get<int64_t>();
    };
    const int64_t min = count("minItems", 0), max = count("maxItems", -1);
    if (max >= 0 && max < min) fail(at, "maxItems is below minItems: no array fits");
    std::vector<std::string> prefix;
    if (auto pi = s.find("prefixItems"); pi != s.end()) {
      if (!pi->is_array()) fail(at + "/prefixItems", "expected a list of schemas");
      for (size_t i = 0; i < pi->size(); ++i) prefix.push_back(visit((*pi)[i], at + "/prefixItems/" + std::to_string(i), depth + 1));
    }
    std::string item;  // "" : no items after the prefix
    auto it = s.find("items");
    if (it == s.end()) item = p("value");
    else if (it->is_boolean()) item = it->get<bool>() ? p("value") : "";
    else item = visit(*it, at + "/items", depth + 1);
    const int64_t k = (int64_t)prefix.size();
    if (item.empty() && min > k) fail(at, "minItems is more than prefixItems allows with items false");
    const std::string comma = "\",\" " + p("space") + " ";
    // After the prefix: items, between max(0, min - k) and max - k of them.
    std::string rest;
    if (!item.empty() && (max < 0 || max > k)) {
      const int64_t lo = std::max<int64_t>(0, min - k), hi = max < 0 ? -1 : max - k;
      const std::string hi_s = hi < 0 ? "" : std::to_string(hi);
      if (k == 0) {
        // item ("," item){lo-1, hi-1}, optional when lo is 0.
        const std::string more = "(" + comma + item + "){" + std::to_string(std::max<int64_t>(0, lo - 1)) + "," +
                                 (hi < 0 ? "" : std::to_string(hi - 1)) + "}";
        rest = "(" + item + " " + more + ")" + (lo == 0 ? "?" : "");
      } else {
        rest = "(" + comma + item + "){" + std::to_string(lo) + "," + hi_s + "}";
      }
    }
    // The prefix, whose items past min may be cut short (then nothing follows them).
    std::string body = rest;
    for (int64_t i = std::min<int64_t>(k, max < 0 ? k : max); i-- > 0;) {
      std::string one = (i ? comma : "") + prefix[(size_t)i] + (body.empty() ? "" : " " + body);
      if (i >= min) one = "(" + one + ")?";
      body = new_rule("arr", one);
    }
    return "\"[\" " + p("space") + " " + body + " \"]\" " + p("space");
  }

  std::string resolve_ref(const std::string& ref, const std::string& at, int depth) {
    if (auto it = refs_.find(ref); it != refs_.end()) return it->second;
    const json* target = nullptr;
    if (ref == "#") target = &root_;
    else if (ref.rfind("#/", 0) == 0) {
      const json* cur = &root_;
      size_t i = 2;
      while (cur && i <= ref.size()) {
        const size_t j = std::min(ref.find('/', i), ref.size());
        std::string tok = ref.substr(i, j - i);
        for (size_t q = 0; (q = tok.find('~', q)) != std::string::npos; ++q)
          if (q + 1 < tok.size()) tok.replace(q, 2, tok[q + 1] == '1' ? "/" : "~");
        cur = cur->is_object() && cur->contains(tok) ? &(*cur)[tok] : nullptr;
        i = j + 1;
      }
      target = cur;
    }
    if (!target) fail(at + "/$ref", "'" + ref + "' does not resolve; use a local reference like #/$defs/name");
    // Named before it is visited, so a recursive schema refers to itself.
    const std::string name = new_rule("ref", "");
    refs_[ref] = name;
    const std::string body = visit(*target, ref.substr(1), depth + 1);
    for (auto& r : rules_)
      if (r.first == name) r.second = body;
    return name;
  }

  std::string visit(const json& s, const std::string& at, int depth) {
    if (depth > o_.max_depth) fail(at, "schemas nest deeper than " + std::to_string(o_.max_depth));
    if (++visits_ > 200000) fail(at, "the schema is too large to translate");
    if (s.is_boolean()) {
      if (!s.get<bool>()) fail(at, "the schema `false` matches nothing");
      return p("value");
    }
    if (!s.is_object()) fail(at, "a schema must be an object or a boolean");
    for (const auto& [k, v] : s.items()) {
      static const std::set<std::string> known = {"type", "properties", "required", "additionalProperties", "enum",
                                                  "const", "anyOf", "oneOf", "allOf", "items", "prefixItems",
                                                  "minItems", "maxItems", "minLength", "maxLength", "pattern",
                                                  "format", "minimum", "maximum", "exclusiveMinimum",
                                                  "exclusiveMaximum", "$ref"};
      if (!known.count(k) && !kIgnored.count(k))
        fail(at + "/" + k, "the keyword '" + k + "' is not supported (OpenAI's structured outputs subset is); drop it");
    }
    if (auto r = s.find("$ref"); r != s.end()) {
      if (!r->is_string()) fail(at + "/$ref", "expected a string");
      return resolve_ref(r->get<std::string>(), at, depth);
    }
    if (auto c = s.find("const"); c != s.end()) return "(" + literal_value(*c) + ")";
    if (auto e = s.find("enum"); e != s.end()) {
      if (!e->is_array() || e->empty()) fail(at + "/enum", "expected a non-empty list");
      std::string body;
      for (size_t i = 0; i < e->size(); ++i) body += (i ? " | " : "") + literal_value((*e)[i]);
      return new_rule("enum", body);
    }
    for (const char* key : {"anyOf", "oneOf"})
      if (auto a = s.find(key); a != s.end()) {
        if (!a->is_array() || a->empty()) fail(at + "/" + key, "expected a non-empty list of schemas");
        std::string body;
        for (size_t i = 0; i < a->size(); ++i)
          body += (i ? " | " : "") + visit((*a)[i], at + "/" + key + "/" + std::to_string(i), depth + 1);
        return new_rule(key, body);
      }
    if (auto a = s.find("allOf"); a != s.end()) {
      if (!a->is_array() || a->size() != 1) fail(at + "/allOf", "only an allOf of one schema is supported");
      return visit((*a)[0], at + "/allOf/0", depth + 1);
    }
    std::vector<std::string> types;
    if (auto t = s.find("type"); t != s.end()) {
      if (t->is_string()) types.push_back(t->get<std::string>());
      else if (t->is_array() && !t->empty())
        for (const json& x : *t) {
          if (!x.is_string()) fail(at + "/type", "expected a type name or a list of them");
          types.push_back(x.get<std::string>());
        }
      else fail(at + "/type", "expected a type name or a list of them");
    } else if (s.contains("properties") || s.contains("additionalProperties")) {
      types.push_back("object");
    } else if (s.contains("items") || s.contains("prefixItems")) {
      types.push_back("array");
    } else if (s.contains("pattern") || s.contains("format") || s.contains("minLength") || s.contains("maxLength")) {
      types.push_back("string");
    } else {
      return p("value");
    }
    std::string body;
    for (const std::string& t : types) {
      std::string one;
      if (t == "object") one = object_rule(s, at, depth);
      else if (t == "array") one = array_rule(s, at, depth);
      else if (t == "string") one = string_rule(s, at);
      else if (t == "integer") one = number_rule(s, at, true);
      else if (t == "number") one = number_rule(s, at, false);
      else if (t == "boolean") one = p("boolean");
      else if (t == "null") one = p("null");
      else fail(at + "/type", "'" + t + "' is not a JSON Schema type");
      body += (body.empty() ? "" : " | ") + one;
    }
    return new_rule(types.size() == 1 ? types[0] : "type", body);
  }

  const json& root_;
  const JsonSchemaOptions& o_;
  std::string prefix_;
  std::vector<std::pair<std::string, std::string>> rules_;
  std::map<std::string, std::string> refs_;
  size_t visits_ = 0;
};

}  // namespace

std::string json_schema_to_gbnf(std::string_view schema_json, const JsonSchemaOptions& options, std::string_view root) {
  if (schema_json.size() > options.max_schema_bytes)
    throw Error(ErrorCode::kValue, "json_schema: the schema is " + std::to_string(schema_json.size()) +
                                       " bytes, more than the limit of " + std::to_string(options.max_schema_bytes));
  json schema;
  try {
    // Depth-limited by nlohmann's own recursion? It recurses per nesting level, so bound it first.
    int depth = 0, worst = 0;
    bool in_string = false, escaped = false;
    for (char c : schema_json) {
      if (in_string) {
        if (escaped) escaped = false;
        else if (c == '\\') escaped = true;
        else if (c == '"') in_string = false;
      } else if (c == '"') in_string = true;
      else if (c == '{' || c == '[') worst = std::max(worst, ++depth);
      else if (c == '}' || c == ']') --depth;
    }
    if (worst > 4 * options.max_depth + 8)
      throw Error(ErrorCode::kValue, "json_schema: the schema nests deeper than this server takes (" +
                                         std::to_string(worst) + " levels); flatten it");
    schema = json::parse(schema_json);
  } catch (const json::exception& e) {
    throw Error(ErrorCode::kValue, std::string("json_schema: the schema is not valid JSON: ") + e.what());
  }
  const std::string prefix = root == "root" ? std::string() : std::string(root) + "-";
  std::string text = Converter(schema, options, prefix).run();
  if (!prefix.empty()) {
    // The converter names its start rule <prefix>root; callers asked for `root`.
    text = std::string(root) + " ::= " + prefix + "root\n" + text;
  }
  return text;
}

std::string json_object_gbnf() {
  return json_schema_to_gbnf(R"({"type": "object"})");
}

}  // namespace spore::nlp
