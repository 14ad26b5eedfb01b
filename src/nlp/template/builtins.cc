// jinja2's filters and tests that chat templates use, transformers' tojson, the str/dict/list
// methods templates call (`content.startswith(...)`, `d.items()`), and the globals transformers
// installs (raise_exception, strftime_now, namespace, dict) plus jinja2's range.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <map>

#include "nlp/template/errors.h"
#include "nlp/template/interpreter.h"
#include "nlp/template/pystr.h"

namespace spore::nlp::tmpl {
namespace {

using FilterMap = std::map<std::string, FilterFn, std::less<>>;
using TestMap = std::map<std::string, TestFn, std::less<>>;

std::vector<Value> items_of(const Value& v, int line) {
  std::vector<Value> out;
  if (!iterate(v, out)) render_error(line, "'" + type_name(v) + "' object is not iterable");
  return out;
}

std::int64_t int_arg(const Value& v, int line, const char* what) {
  if (v.is_int()) return v.integer();
  if (v.is_bool()) return v.boolean() ? 1 : 0;
  render_error(line, std::string(what) + " must be an integer, not " + type_name(v));
}

std::string str_arg(const Value& v, int line, const char* what) {
  if (v.is_string()) return v.str();
  if (v.is_undefined()) undefined_error(v, line);
  render_error(line, std::string(what) + " must be a string, not " + type_name(v));
}

std::optional<std::string> opt_str(const Value& v, int line, const char* what) {
  if (v.is_none() || v.is_undefined()) return std::nullopt;
  return str_arg(v, line, what);
}

// The string a str filter works on: jinja2 calls soft_str (Undefined -> "").
std::string soft(const Value& v) { return to_str(v); }

// jinja2's make_attrgetter: "a.b.0" looked up item-first, as environment.getitem does.
Value attr_path(const Value& item, const std::string& path, int line) {
  Value cur = item;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (cur.is_undefined()) return cur;
    cur = digits ? get_item(cur, Value(static_cast<std::int64_t>(std::atoll(part.c_str()))), line)
                 : get_item(cur, Value(part), line);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return cur;
}

Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value(pystr::lower(v.str()));
  return v;
}

// ---- filters ----

Value keep_markup(const Value& from, std::string s);

Value f_trim(Interpreter&, const Value& v, CallArgs& a) {
  return keep_markup(v, pystr::strip(soft(v), opt_str(a.get(0, "chars"), a.line, "trim's chars"), pystr::Side::kBoth));
}

Value f_tojson(Interpreter&, const Value& v, CallArgs& a) {
  // transformers' signature: tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
  JsonStyle st;
  st.ensure_ascii = truthy(a.get(0, "ensure_ascii", Value(false)));
  Value indent = a.get(1, "indent", Value(None{}));
  if (indent.is_string()) {
    st.indent_is_text = true;
    st.indent_text = indent.str();
  } else if (!indent.is_none()) {
    st.indent = static_cast<int>(std::clamp<std::int64_t>(int_arg(indent, a.line, "tojson's indent"), 0, 1000));
  }
  if (st.indent >= 0 || st.indent_is_text) st.item_sep = ",";
  Value seps = a.get(2, "separators", Value(None{}));
  if (!seps.is_none()) {
    if (!seps.is_list() || seps.list().items.size() != 2)
      render_error(a.line, "tojson's separators must be a pair (item_separator, key_separator)");
    st.item_sep = str_arg(seps.list().items[0], a.line, "a separator");
    st.key_sep = str_arg(seps.list().items[1], a.line, "a separator");
  }
  st.sort_keys = truthy(a.get(3, "sort_keys", Value(false)));
  try {
    return Value(to_json(v, st));
  } catch (const std::string& why) {
    if (v.is_undefined()) undefined_error(v, a.line);
    render_error(a.line, "tojson: " + why);
  }
}

Value f_length(Interpreter&, const Value& v, CallArgs& a) {
  if (v.is_string()) return Value(static_cast<std::int64_t>(pystr::length(v.str())));
  if (v.is_list()) return Value(static_cast<std::int64_t>(v.list().items.size()));
  if (v.is_dict()) return Value(static_cast<std::int64_t>(v.dict().items.size()));
  if (v.is_undefined()) return Value(0);
  render_error(a.line, "object of type '" + type_name(v) + "' has no len()");
}

Value f_join(Interpreter& in, const Value& v, CallArgs& a) {
  std::string sep = soft(a.get(0, "d", Value("")));
  Value attr = a.get(1, "attribute", Value(None{}));
  std::string out;
  bool first = true;
  for (const Value& item : items_of(v, a.line)) {
    if (!first) out += sep;
    first = false;
    append_str(out, attr.is_none() ? item : attr_path(item, soft(attr), a.line));
    in.check_size(a.line, out.size());
  }
  return Value(std::move(out));
}

}  // namespace

// str.replace with the result's size checked before it is built (an empty `old` matches
// between every code point, so a large `repl` could otherwise explode).
std::string checked_replace(Interpreter& in, int line, const std::string& s, const std::string& old,
                            const std::string& repl, long count) {
  double hits = static_cast<double>(pystr::count(s, old));
  if (count >= 0 && hits > static_cast<double>(count)) hits = static_cast<double>(count);
  double size = static_cast<double>(s.size()) + hits * static_cast<double>(repl.size());
  in.check_size(line, size > 1e18 ? SIZE_MAX : static_cast<std::size_t>(size));
  in.step(line, static_cast<std::size_t>(size / 1024));
  return pystr::replace(s, old, repl, count);
}

namespace {

Value f_replace(Interpreter& in, const Value& v, CallArgs& a) {
  Value count = a.get(2, "count", Value(None{}));
  return Value(checked_replace(in, a.line, soft(v), soft(a.get(0, "old")), soft(a.get(1, "new")),
                               count.is_none() ? -1 : static_cast<long>(int_arg(count, a.line, "replace's count"))));
}

Value f_lower(Interpreter&, const Value& v, CallArgs&) { return keep_markup(v, pystr::lower(soft(v))); }
Value f_upper(Interpreter&, const Value& v, CallArgs&) { return keep_markup(v, pystr::upper(soft(v))); }
Value f_title(Interpreter&, const Value& v, CallArgs&) { return Value(pystr::jinja_title(soft(v))); }
Value f_capitalize(Interpreter&, const Value& v, CallArgs&) { return keep_markup(v, pystr::capitalize(soft(v))); }
Value f_safe(Interpreter&, const Value& v, CallArgs&) { return make_markup(to_str(v)); }
Value f_string(Interpreter&, const Value& v, CallArgs&) {
  Value r(to_str(v));
  r.safe = v.safe;  // soft_str keeps Markup
  return r;
}
// Markup's methods return Markup (markupsafe wraps strip, lower, upper, capitalize, ...).
Value keep_markup(const Value& from, std::string s) {
  Value r(std::move(s));
  r.safe = from.is_string() && from.safe;
  return r;
}

Value f_escape(Interpreter&, const Value& v, CallArgs&) {
  if (v.is_string() && v.safe) return v;
  return make_markup(html_escape(soft(v)));
}

Value f_items(Interpreter&, const Value& v, CallArgs& a) {
  if (v.is_undefined()) return make_list({});
  if (!v.is_dict()) render_error(a.line, "|items can only get item pairs from a mapping, not " + type_name(v));
  std::vector<Value> out;
  for (const auto& [k, val] : v.dict().items) out.push_back(make_list({k, val}, true));
  return make_list(std::move(out));
}

Value f_default(Interpreter&, const Value& v, CallArgs& a) {
  bool boolean = truthy(a.get(1, "boolean", Value(false)));
  if (v.is_undefined() || (boolean && !truthy(v))) return a.get(0, "default_value", Value(""));
  return v;
}

Value f_first(Interpreter&, const Value& v, CallArgs& a) {
  std::vector<Value> items = items_of(v, a.line);
  if (items.empty()) return Value(Undefined{"No first item, sequence was empty."});
  return items.front();
}

Value f_last(Interpreter&, const Value& v, CallArgs& a) {
  std::vector<Value> items = items_of(v, a.line);
  if (items.empty()) return Value(Undefined{"No last item, sequence was empty."});
  return items.back();
}

Value f_list(Interpreter&, const Value& v, CallArgs& a) { return make_list(items_of(v, a.line)); }

Value f_map(Interpreter& in, const Value& v, CallArgs& a) {
  std::vector<Value> items = items_of(v, a.line);
  std::vector<Value> out;
  if (a.pos.empty()) {
    Value attr = a.get(99, "attribute");
    if (attr.is_undefined()) render_error(a.line, "|map needs a filter name or attribute=");
    Value dflt = a.get(99, "default");
    for (const Value& it : items) {
      Value r = attr_path(it, soft(attr), a.line);
      out.push_back(r.is_undefined() && a.has(99, "default") ? dflt : r);
    }
    return make_list(std::move(out));
  }
  std::string fname = str_arg(a.pos[0], a.line, "|map's filter name");
  FilterFn fn = find_filter(fname);
  if (!fn) unsupported(a.line, "the filter '" + fname + "'");
  CallArgs rest;
  rest.line = a.line;
  rest.pos.assign(a.pos.begin() + 1, a.pos.end());
  rest.kw = a.kw;
  for (const Value& it : items) {
    in.step(a.line);
    out.push_back(fn(in, it, rest));
  }
  return make_list(std::move(out));
}

// select/reject/selectattr/rejectattr share jinja2's select_or_reject.
Value select_impl(Interpreter& in, const Value& v, CallArgs& a, bool by_attr, bool keep_when) {
  std::size_t at = 0;
  std::string attr;
  if (by_attr) {
    if (a.pos.empty()) render_error(a.line, "selectattr/rejectattr need an attribute name");
    attr = str_arg(a.pos[0], a.line, "the attribute name");
    at = 1;
  }
  TestFn test = nullptr;
  CallArgs targs;
  targs.line = a.line;
  if (a.pos.size() > at) {
    std::string tname = str_arg(a.pos[at], a.line, "the test name");
    test = find_test(tname);
    if (!test) unsupported(a.line, "the test '" + tname + "'");
    targs.pos.assign(a.pos.begin() + static_cast<long>(at) + 1, a.pos.end());
  }
  std::vector<Value> out;
  for (const Value& it : items_of(v, a.line)) {
    in.step(a.line);
    Value probe = by_attr ? attr_path(it, attr, a.line) : it;
    bool r = test ? test(in, probe, targs) : truthy(probe);
    if (r == keep_when) out.push_back(it);
  }
  return make_list(std::move(out));
}
Value f_select(Interpreter& in, const Value& v, CallArgs& a) { return select_impl(in, v, a, false, true); }
Value f_reject(Interpreter& in, const Value& v, CallArgs& a) { return select_impl(in, v, a, false, false); }
Value f_selectattr(Interpreter& in, const Value& v, CallArgs& a) { return select_impl(in, v, a, true, true); }
Value f_rejectattr(Interpreter& in, const Value& v, CallArgs& a) { return select_impl(in, v, a, true, false); }

// Python's int(str): optional whitespace and sign, digits with single underscores between.
bool parse_py_int(std::string s, std::int64_t& out) {
  s = pystr::strip(s, std::nullopt, pystr::Side::kBoth);
  std::string digits;
  std::size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) digits += s[i++];
  if (i >= s.size()) return false;
  for (; i < s.size(); ++i) {
    if (s[i] >= '0' && s[i] <= '9') {
      digits += s[i];
    } else if (s[i] == '_' && i > 0 && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i - 1])) &&
               std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
    } else {
      return false;
    }
  }
  errno = 0;
  out = std::strtoll(digits.c_str(), nullptr, 10);
  return errno == 0;
}

bool parse_py_float(std::string s, double& out) {
  s = pystr::strip(s, std::nullopt, pystr::Side::kBoth);
  if (s.empty() || s.find('_') != std::string::npos) return false;
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return false;
  std::string low = pystr::lower(s);
  if (low.find("0x") != std::string::npos) return false;  // strtod reads hex; Python does not
  return true;
}

Value f_int(Interpreter&, const Value& v, CallArgs& a) {
  Value dflt = a.get(0, "default", Value(0));
  if (v.is_undefined()) undefined_error(v, a.line);
  if (v.is_int()) return v;
  if (v.is_bool()) return Value(v.boolean() ? 1 : 0);
  if (v.is_float()) {
    if (!std::isfinite(v.real())) return dflt;
    if (std::fabs(v.real()) >= 9.2e18) unsupported(a.line, "integers beyond 64 bits");
    return Value(static_cast<std::int64_t>(std::trunc(v.real())));
  }
  if (v.is_string()) {
    std::int64_t i;
    if (parse_py_int(v.str(), i)) return Value(i);
    double d;
    if (parse_py_float(v.str(), d) && std::isfinite(d) && std::fabs(d) < 9.2e18)
      return Value(static_cast<std::int64_t>(std::trunc(d)));
  }
  return dflt;
}

Value f_float(Interpreter&, const Value& v, CallArgs& a) {
  Value dflt = a.get(0, "default", Value(0.0));
  if (v.is_undefined()) undefined_error(v, a.line);
  if (v.is_number()) return Value(v.as_double());
  double d;
  if (v.is_string() && parse_py_float(v.str(), d)) return Value(d);
  return dflt;
}

Value f_abs(Interpreter&, const Value& v, CallArgs& a) {
  if (v.is_float()) return Value(std::fabs(v.real()));
  if (v.is_int()) {
    if (v.integer() == INT64_MIN) unsupported(a.line, "integers beyond 64 bits");
    return Value(v.integer() < 0 ? -v.integer() : v.integer());
  }
  if (v.is_bool()) return Value(v.boolean() ? 1 : 0);
  render_error(a.line, "bad operand type for abs(): '" + type_name(v) + "'");
}

Value f_round(Interpreter&, const Value& v, CallArgs& a) {
  std::int64_t prec = int_arg(a.get(0, "precision", Value(0)), a.line, "round's precision");
  std::string method = soft(a.get(1, "method", Value("common")));
  if (!v.is_number()) render_error(a.line, "round needs a number, not " + type_name(v));
  if (method == "common" && !v.is_float()) return v.is_bool() ? Value(v.boolean() ? 1 : 0) : v;
  double x = v.as_double();
  double scale = std::pow(10.0, static_cast<double>(std::clamp<std::int64_t>(prec, -300, 300)));
  double r;
  if (method == "common") {
    r = std::nearbyint(x * scale) / scale;  // round-half-even, as Python's round()
  } else if (method == "floor") {
    r = std::floor(x * scale) / scale;
  } else if (method == "ceil") {
    r = std::ceil(x * scale) / scale;
  } else {
    render_error(a.line, "round's method must be 'common', 'ceil' or 'floor'");
  }
  return Value(r);
}

Value f_reverse(Interpreter&, const Value& v, CallArgs& a) {
  if (v.is_string()) {
    std::vector<std::uint32_t> cps = pystr::code_points(v.str());
    std::string out;
    for (auto it = cps.rbegin(); it != cps.rend(); ++it) pystr::append_cp(out, *it);
    return Value(std::move(out));
  }
  std::vector<Value> items = items_of(v, a.line);
  std::reverse(items.begin(), items.end());
  return make_list(std::move(items));
}

void sort_values(std::vector<Value>& items, bool case_sensitive, const std::string& attr, bool reverse, int line) {
  std::vector<std::pair<Value, Value>> keyed;
  for (auto& it : items) keyed.emplace_back(sort_key(attr.empty() ? it : attr_path(it, attr, line), case_sensitive), it);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return reverse ? compare_values(y.first, x.first, line) < 0 : compare_values(x.first, y.first, line) < 0;
  });
  for (std::size_t i = 0; i < items.size(); ++i) items[i] = keyed[i].second;
}

Value f_sort(Interpreter& in, const Value& v, CallArgs& a) {
  std::vector<Value> items = items_of(v, a.line);
  in.step(a.line, items.size());
  Value attr = a.get(2, "attribute", Value(None{}));
  sort_values(items, truthy(a.get(1, "case_sensitive", Value(false))), attr.is_none() ? "" : soft(attr),
              truthy(a.get(0, "reverse", Value(false))), a.line);
  return make_list(std::move(items));
}

Value f_dictsort(Interpreter& in, const Value& v, CallArgs& a) {
  if (!v.is_dict()) render_error(a.line, "|dictsort needs a mapping, not " + type_name(v));
  bool cs = truthy(a.get(0, "case_sensitive", Value(false)));
  std::string by = soft(a.get(1, "by", Value("key")));
  bool reverse = truthy(a.get(2, "reverse", Value(false)));
  if (by != "key" && by != "value") render_error(a.line, "|dictsort's by must be 'key' or 'value'");
  std::vector<Value> pairs;
  for (const auto& [k, val] : v.dict().items) pairs.push_back(make_list({k, val}, true));
  in.step(a.line, pairs.size());
  std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& x, const Value& y) {
    std::size_t i = by == "key" ? 0 : 1;
    Value kx = sort_key(x.list().items[i], cs), ky = sort_key(y.list().items[i], cs);
    return reverse ? compare_values(ky, kx, a.line) < 0 : compare_values(kx, ky, a.line) < 0;
  });
  return make_list(std::move(pairs));
}

Value f_unique(Interpreter& in, const Value& v, CallArgs& a) {
  bool cs = truthy(a.get(0, "case_sensitive", Value(false)));
  Value attr = a.get(1, "attribute", Value(None{}));
  std::vector<Value> seen, out;
  for (const Value& it : items_of(v, a.line)) {
    in.step(a.line);
    Value key = sort_key(attr.is_none() ? it : attr_path(it, soft(attr), a.line), cs);
    bool dup = std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equal(s, key); });
    if (dup) continue;
    seen.push_back(key);
    out.push_back(it);
  }
  return make_list(std::move(out));
}

Value min_max(const Value& v, CallArgs& a, bool want_max) {
  bool cs = truthy(a.get(0, "case_sensitive", Value(false)));
  Value attr = a.get(1, "attribute", Value(None{}));
  std::vector<Value> items = items_of(v, a.line);
  if (items.empty()) return Value(Undefined{std::string("No aggregated item, sequence was empty.")});
  std::size_t best = 0;
  auto key = [&](const Value& x) { return sort_key(attr.is_none() ? x : attr_path(x, soft(attr), a.line), cs); };
  for (std::size_t i = 1; i < items.size(); ++i) {
    int c = compare_values(key(items[i]), key(items[best]), a.line);
    if (want_max ? c > 0 : c < 0) best = i;
  }
  return items[best];
}
Value f_min(Interpreter&, const Value& v, CallArgs& a) { return min_max(v, a, false); }
Value f_max(Interpreter&, const Value& v, CallArgs& a) { return min_max(v, a, true); }

Value f_sum(Interpreter& in, const Value& v, CallArgs& a) {
  Value attr = a.get(0, "attribute", Value(None{}));
  Value total = a.get(1, "start", Value(0));
  for (const Value& it : items_of(v, a.line))
    total = arithmetic("+", total, attr.is_none() ? it : attr_path(it, soft(attr), a.line), a.line, in);
  return total;
}

Value f_indent(Interpreter& in, const Value& v, CallArgs& a) {
  Value width = a.get(0, "width", Value(4));
  std::string pad = width.is_string() ? width.str()
                                      : std::string(static_cast<std::size_t>(std::clamp<std::int64_t>(
                                                        int_arg(width, a.line, "indent's width"), 0, 1000)), ' ');
  bool first = truthy(a.get(1, "first", Value(false)));
  bool blank = truthy(a.get(2, "blank", Value(false)));
  std::vector<std::string> lines = pystr::splitlines(soft(v) + "\n");
  std::string rv;
  if (blank) {
    for (std::size_t i = 0; i < lines.size(); ++i) rv += (i ? "\n" + pad : "") + lines[i];
  } else {
    rv = lines.empty() ? "" : lines[0];
    for (std::size_t i = 1; i < lines.size(); ++i) rv += "\n" + (lines[i].empty() ? "" : pad) + lines[i];
  }
  if (first) rv = pad + rv;
  in.check_size(a.line, rv.size());
  return Value(std::move(rv));
}

Value f_attr(Interpreter&, const Value& v, CallArgs& a) {
  return get_attribute(v, str_arg(a.get(0, "name"), a.line, "attr's name"), a.line);
}

const FilterMap& filters() {
  static const FilterMap m = {
      {"trim", f_trim},       {"tojson", f_tojson},       {"length", f_length},   {"count", f_length},
      {"join", f_join},       {"replace", f_replace},     {"lower", f_lower},     {"upper", f_upper},
      {"title", f_title},     {"capitalize", f_capitalize}, {"items", f_items},   {"default", f_default},
      {"d", f_default},       {"first", f_first},         {"last", f_last},       {"map", f_map},
      {"select", f_select},   {"reject", f_reject},       {"selectattr", f_selectattr},
      {"rejectattr", f_rejectattr}, {"list", f_list},     {"string", f_string},   {"int", f_int},
      {"float", f_float},     {"abs", f_abs},             {"unique", f_unique},   {"reverse", f_reverse},
      {"sort", f_sort},       {"dictsort", f_dictsort},   {"indent", f_indent},   {"safe", f_safe},
      {"sum", f_sum},         {"min", f_min},             {"max", f_max},         {"round", f_round},
      {"attr", f_attr},       {"e", f_escape},            {"escape", f_escape},   {"forceescape", f_escape},
  };
  return m;
}

// ---- tests ----

Value targ(CallArgs& a) {
  if (a.pos.empty()) render_error(a.line, "this test needs an argument (like `x is eq 3`)");
  return a.pos[0];
}
bool t_defined(Interpreter&, const Value& v, CallArgs&) { return !v.is_undefined(); }
bool t_undefined(Interpreter&, const Value& v, CallArgs&) { return v.is_undefined(); }
bool t_none(Interpreter&, const Value& v, CallArgs&) { return v.is_none(); }
bool t_string(Interpreter&, const Value& v, CallArgs&) { return v.is_string(); }
bool t_mapping(Interpreter&, const Value& v, CallArgs&) { return v.is_dict(); }
bool t_iterable(Interpreter&, const Value& v, CallArgs&) {
  return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
}
bool t_sequence(Interpreter&, const Value& v, CallArgs&) {
  return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
}
bool t_number(Interpreter&, const Value& v, CallArgs&) { return v.is_number(); }
bool t_integer(Interpreter&, const Value& v, CallArgs&) { return v.is_int(); }
bool t_float(Interpreter&, const Value& v, CallArgs&) { return v.is_float(); }
bool t_boolean(Interpreter&, const Value& v, CallArgs&) { return v.is_bool(); }
bool t_true(Interpreter&, const Value& v, CallArgs&) { return v.is_bool() && v.boolean(); }
bool t_false(Interpreter&, const Value& v, CallArgs&) { return v.is_bool() && !v.boolean(); }
bool t_callable(Interpreter&, const Value& v, CallArgs&) { return v.is_callable(); }
bool t_odd(Interpreter&, const Value& v, CallArgs& a) { return int_arg(v, a.line, "odd's value") % 2 != 0; }
bool t_even(Interpreter&, const Value& v, CallArgs& a) { return int_arg(v, a.line, "even's value") % 2 == 0; }
bool t_divisibleby(Interpreter&, const Value& v, CallArgs& a) {
  std::int64_t d = int_arg(targ(a), a.line, "divisibleby's argument");
  if (d == 0) render_error(a.line, "integer division or modulo by zero");
  return int_arg(v, a.line, "divisibleby's value") % d == 0;
}
bool t_eq(Interpreter&, const Value& v, CallArgs& a) { return equal(v, targ(a)); }
bool t_ne(Interpreter&, const Value& v, CallArgs& a) { return !equal(v, targ(a)); }
bool t_lt(Interpreter&, const Value& v, CallArgs& a) { return compare_values(v, targ(a), a.line) < 0; }
bool t_le(Interpreter&, const Value& v, CallArgs& a) { return compare_values(v, targ(a), a.line) <= 0; }
bool t_gt(Interpreter&, const Value& v, CallArgs& a) { return compare_values(v, targ(a), a.line) > 0; }
bool t_ge(Interpreter&, const Value& v, CallArgs& a) { return compare_values(v, targ(a), a.line) >= 0; }
bool t_in(Interpreter&, const Value& v, CallArgs& a) { return contains(targ(a), v, a.line); }
bool t_lower(Interpreter&, const Value& v, CallArgs&) { return v.is_string() && pystr::lower(v.str()) == v.str(); }
bool t_upper(Interpreter&, const Value& v, CallArgs&) { return v.is_string() && pystr::upper(v.str()) == v.str(); }
bool t_sameas(Interpreter&, const Value& v, CallArgs& a) {
  Value o = targ(a);
  if (v.is_none() || v.is_bool() || o.is_none() || o.is_bool()) return v.v.index() == o.v.index() && equal(v, o);
  return equal(v, o) && (v.is_int() || v.is_string());
}
bool t_escaped(Interpreter&, const Value&, CallArgs&) { return false; }

const TestMap& tests() {
  static const TestMap m = {
      {"defined", t_defined},   {"undefined", t_undefined}, {"none", t_none},       {"string", t_string},
      {"mapping", t_mapping},   {"iterable", t_iterable},   {"sequence", t_sequence}, {"number", t_number},
      {"integer", t_integer},   {"float", t_float},         {"boolean", t_boolean}, {"true", t_true},
      {"false", t_false},       {"callable", t_callable},   {"odd", t_odd},         {"even", t_even},
      {"divisibleby", t_divisibleby}, {"eq", t_eq},         {"equalto", t_eq},      {"==", t_eq},
      {"ne", t_ne},             {"!=", t_ne},               {"lt", t_lt},           {"lessthan", t_lt},
      {"<", t_lt},              {"le", t_le},               {"<=", t_le},           {"gt", t_gt},
      {"greaterthan", t_gt},    {">", t_gt},                {"ge", t_ge},           {">=", t_ge},
      {"in", t_in},             {"lower", t_lower},         {"upper", t_upper},     {"sameas", t_sameas},
      {"escaped", t_escaped},
  };
  return m;
}

// ---- methods ----

class Method : public Callable {
 public:
  Method(Value self, std::string name) : self_(std::move(self)), name_(std::move(name)) {}
  Value call(Interpreter& in, CallArgs& a) const override;
  std::string name() const override { return "built-in method " + name_ + " of " + type_name(self_) + " object"; }

 private:
  Value self_;
  std::string name_;
};

bool prefix_match(const Value& s, const Value& arg, bool at_end, int line) {
  std::vector<Value> options;
  if (arg.is_list()) {
    options = arg.list().items;
  } else {
    options = {arg};
  }
  for (const Value& o : options) {
    std::string p = str_arg(o, line, at_end ? "endswith's argument" : "startswith's argument");
    const std::string& t = s.str();
    if (p.size() <= t.size() && (at_end ? t.compare(t.size() - p.size(), p.size(), p) == 0 : t.compare(0, p.size(), p) == 0))
      return true;
  }
  return false;
}

bool all_cps(const std::string& s, bool (*pred)(std::uint32_t)) {
  if (s.empty()) return false;
  for (std::size_t i = 0; i < s.size();)
    if (!pred(pystr::next_cp(s, i))) return false;
  return true;
}

std::vector<Value> str_values(std::vector<std::string> parts) {
  std::vector<Value> out;
  out.reserve(parts.size());
  for (auto& p : parts) out.emplace_back(std::move(p));
  return out;
}

Value Method::call(Interpreter& in, CallArgs& a) const {
  const int line = a.line;
  const std::string& n = name_;
  if (self_.is_string()) {
    const std::string& s = self_.str();
    if (n == "startswith" || n == "endswith") return Value(prefix_match(self_, a.get(0, "prefix"), n == "endswith", line));
    if (n == "strip" || n == "lstrip" || n == "rstrip") {
      auto side = n == "strip" ? pystr::Side::kBoth : n == "lstrip" ? pystr::Side::kLeft : pystr::Side::kRight;
      return keep_markup(self_, pystr::strip(s, opt_str(a.get(0, "chars", Value(None{})), line, "strip's chars"), side));
    }
    if (n == "split" || n == "rsplit") {
      auto sep = opt_str(a.get(0, "sep", Value(None{})), line, "split's separator");
      if (sep && sep->empty()) render_error(line, "empty separator");
      long maxsplit = static_cast<long>(int_arg(a.get(1, "maxsplit", Value(-1)), line, "maxsplit"));
      in.step(line, s.size() / 64);
      return make_list(str_values(n == "split" ? pystr::split(s, sep, maxsplit) : pystr::rsplit(s, sep, maxsplit)));
    }
    if (n == "splitlines") return make_list(str_values(pystr::splitlines(s)));
    if (n == "lower") return keep_markup(self_, pystr::lower(s));
    if (n == "upper") return keep_markup(self_, pystr::upper(s));
    if (n == "title") return keep_markup(self_, pystr::title(s));
    if (n == "capitalize") return keep_markup(self_, pystr::capitalize(s));
    if (n == "replace") {
      return Value(checked_replace(in, line, s, str_arg(a.get(0, "old"), line, "replace's old"),
                                   str_arg(a.get(1, "new"), line, "replace's new"),
                                   static_cast<long>(int_arg(a.get(2, "count", Value(-1)), line, "replace's count"))));
    }
    if (n == "find" || n == "rfind") return Value(static_cast<std::int64_t>(pystr::find(s, str_arg(a.get(0, "sub"), line, "find's argument"), n == "rfind")));
    if (n == "count") return Value(static_cast<std::int64_t>(pystr::count(s, str_arg(a.get(0, "sub"), line, "count's argument"))));
    if (n == "join") {
      std::string out;
      bool first = true;
      for (const Value& it : items_of(a.get(0, "iterable"), line)) {
        if (!first) out += s;
        first = false;
        out += str_arg(it, line, "join's items");
        in.check_size(line, out.size());
      }
      return Value(std::move(out));
    }
    if (n == "isdigit") return Value(all_cps(s, [](std::uint32_t c) { return c >= '0' && c <= '9'; }));
    if (n == "isalpha") return Value(all_cps(s, [](std::uint32_t c) { return (c | 32) >= 'a' && (c | 32) <= 'z'; }));
    if (n == "isalnum")
      return Value(all_cps(s, [](std::uint32_t c) { return ((c | 32) >= 'a' && (c | 32) <= 'z') || (c >= '0' && c <= '9'); }));
    if (n == "isspace") return Value(all_cps(s, pystr::is_space));
    if (n == "islower") return Value(pystr::lower(s) == s && pystr::upper(s) != s);
    if (n == "isupper") return Value(pystr::upper(s) == s && pystr::lower(s) != s);
  } else if (self_.is_dict()) {
    const Dict& d = self_.dict();
    if (n == "items") {
      std::vector<Value> out;
      for (const auto& [k, v] : d.items) out.push_back(make_list({k, v}, true));
      return make_list(std::move(out));
    }
    if (n == "keys" || n == "values") {
      std::vector<Value> out;
      for (const auto& [k, v] : d.items) out.push_back(n == "keys" ? k : v);
      return make_list(std::move(out));
    }
    if (n == "get") {
      const Value* v = d.find(a.get(0, "key"));
      return v ? *v : a.get(1, "default", Value(None{}));
    }
  } else if (self_.is_list()) {
    const auto& items = self_.list().items;
    Value x = a.get(0, "value");
    if (n == "count") return Value(static_cast<std::int64_t>(std::count_if(items.begin(), items.end(), [&](const Value& v) { return equal(v, x); })));
    if (n == "index") {
      for (std::size_t i = 0; i < items.size(); ++i)
        if (equal(items[i], x)) return Value(static_cast<std::int64_t>(i));
      render_error(line, repr(x) + " is not in list");
    }
  }
  render_error(line, "method " + n + " of " + type_name(self_) + " is not available");
}

const std::map<std::string, int, std::less<>>& method_names() {
  // 1: str, 2: dict, 4: list
  static const std::map<std::string, int, std::less<>> m = {
      {"startswith", 1}, {"endswith", 1}, {"strip", 1},  {"lstrip", 1},   {"rstrip", 1},  {"split", 1},
      {"rsplit", 1},     {"splitlines", 1}, {"lower", 1}, {"upper", 1},   {"title", 1},   {"capitalize", 1},
      {"replace", 1},    {"find", 1},     {"rfind", 1},  {"count", 5},    {"join", 1},    {"isdigit", 1},
      {"isalpha", 1},    {"isalnum", 1},  {"isspace", 1}, {"islower", 1}, {"isupper", 1}, {"items", 2},
      {"keys", 2},       {"values", 2},   {"get", 2},    {"index", 4},
  };
  return m;
}

// ---- globals ----

class Global : public Callable {
 public:
  using Fn = Value (*)(Interpreter&, CallArgs&);
  Global(std::string name, Fn fn) : name_(std::move(name)), fn_(fn) {}
  Value call(Interpreter& in, CallArgs& a) const override { return fn_(in, a); }
  std::string name() const override { return "function " + name_; }

 private:
  std::string name_;
  Fn fn_;
};

Value g_range(Interpreter& in, CallArgs& a) {
  if (a.pos.empty() || a.pos.size() > 3) render_error(a.line, "range() takes 1 to 3 integer arguments");
  std::int64_t start = 0, stop, step = 1;
  if (a.pos.size() == 1) {
    stop = int_arg(a.pos[0], a.line, "range's stop");
  } else {
    start = int_arg(a.pos[0], a.line, "range's start");
    stop = int_arg(a.pos[1], a.line, "range's stop");
    if (a.pos.size() == 3) step = int_arg(a.pos[2], a.line, "range's step");
  }
  if (step == 0) render_error(a.line, "range() arg 3 must not be zero");
  std::vector<Value> out;
  for (std::int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    in.step(a.line);
    out.emplace_back(i);
    if ((step > 0 && i > INT64_MAX - step) || (step < 0 && i < INT64_MIN - step)) break;
  }
  return make_list(std::move(out));
}

Value g_dict(Interpreter&, CallArgs& a) {
  auto d = std::make_shared<Dict>();
  if (!a.pos.empty()) {
    if (!a.pos[0].is_dict()) render_error(a.line, "dict() takes a mapping and keyword arguments");
    *d = a.pos[0].dict();
  }
  for (auto& [k, v] : a.kw) d->set(Value(k), v);
  return Value(d);
}

Value g_namespace(Interpreter&, CallArgs& a) {
  auto ns = std::make_shared<Namespace>();
  if (!a.pos.empty()) {
    if (!a.pos[0].is_dict()) render_error(a.line, "namespace() takes a mapping and keyword arguments");
    ns->attrs = a.pos[0].dict();
  }
  for (auto& [k, v] : a.kw) {
    if (!k.empty() && k[0] == '_')
      render_error(a.line, "chat templates cannot store underscore-prefixed attributes on a namespace ('" + k + "')");
    ns->attrs.set(Value(k), v);
  }
  return Value(ns);
}

Value g_raise_exception(Interpreter&, CallArgs& a) {
  throw Error(ErrorCode::kValue, "chat template line " + std::to_string(a.line) +
                                     " raised an exception: " + to_str(a.get(0, "message")));
}

Value g_strftime_now(Interpreter&, CallArgs& a) {
  std::string fmt = str_arg(a.get(0, "format"), a.line, "strftime_now's format");
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  std::string buf(256 + fmt.size() * 8, '\0');
  std::size_t n = fmt.empty() ? 0 : std::strftime(buf.data(), buf.size(), fmt.c_str(), &local);
  buf.resize(n);
  return Value(buf);
}

}  // namespace

FilterFn find_filter(const std::string& name) {
  auto it = filters().find(name);
  return it == filters().end() ? nullptr : it->second;
}

TestFn find_test(const std::string& name) {
  auto it = tests().find(name);
  return it == tests().end() ? nullptr : it->second;
}

bool has_method(const Value& self, const std::string& name) {
  int kind = self.is_string() ? 1 : self.is_dict() ? 2 : self.is_list() ? 4 : 0;
  if (kind == 0) return false;
  auto it = method_names().find(name);
  return it != method_names().end() && (it->second & kind);
}

Value make_method(const Value& self, const std::string& name) {
  return Value(std::shared_ptr<const Callable>(std::make_shared<Method>(self, name)));
}

void install_globals(Scope& root) {
  auto add = [&](const char* name, Global::Fn fn) {
    root.set(name, Value(std::shared_ptr<const Callable>(std::make_shared<Global>(name, fn))));
  };
  add("range", g_range);
  add("dict", g_dict);
  add("namespace", g_namespace);
  add("raise_exception", g_raise_exception);
  add("strftime_now", g_strftime_now);
}

}  // namespace spore::nlp::tmpl
