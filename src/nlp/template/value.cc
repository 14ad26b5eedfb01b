#include "nlp/template/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "nlp/template/pystr.h"
#include "spore/error.h"

namespace spore::nlp::tmpl {

double Value::as_double() const {
  if (is_float()) return real();
  if (is_int()) return static_cast<double>(integer());
  return boolean() ? 1.0 : 0.0;
}

int nesting(const Value& v) {
  if (v.is_list()) return v.list().depth;
  if (v.is_dict()) return v.dict().depth;
  if (v.is_namespace()) return v.ns().attrs.depth;
  return 0;
}

void check_nesting(const Value& child) {
  if (nesting(child) >= kMaxValueDepth)
    throw Error(ErrorCode::kValue, "chat template: lists, dicts and namespaces nest deeper than " +
                                       std::to_string(kMaxValueDepth) +
                                       " levels inside each other (a value built into itself in a loop?); "
                                       "no chat template needs that");
}

Value make_list(std::vector<Value> items, bool tuple) {
  auto l = std::make_shared<List>();
  for (const Value& item : items) {
    check_nesting(item);
    l->depth = std::max(l->depth, nesting(item) + 1);
  }
  l->items = std::move(items);
  l->tuple = tuple;
  return Value(std::move(l));
}

Value make_dict() { return Value(std::make_shared<Dict>()); }

Value make_markup(std::string s) {
  Value v(std::move(s));
  v.safe = true;
  return v;
}

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

const Value* Dict::find(const Value& key) const {
  for (const auto& [k, v] : items)
    if (equal(k, key)) return &v;
  return nullptr;
}

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : items)
    if (k.is_string() && k.str() == key) return &v;
  return nullptr;
}

void Dict::set(Value key, Value value) {
  check_nesting(value);
  // A replaced value never lowers the depth: a bound kept from above is all the checks need.
  depth = std::max(depth, nesting(value) + 1);
  for (auto& [k, v] : items) {
    if (equal(k, key)) {
      v = std::move(value);
      return;
    }
  }
  items.emplace_back(std::move(key), std::move(value));
}

void Dict::push(Value key, Value value) {
  check_nesting(value);
  depth = std::max(depth, nesting(value) + 1);
  items.emplace_back(std::move(key), std::move(value));
}

bool truthy(const Value& v) {
  if (v.is_undefined() || v.is_none()) return false;
  if (v.is_bool()) return v.boolean();
  if (v.is_int()) return v.integer() != 0;
  if (v.is_float()) return v.real() != 0.0;
  if (v.is_string()) return !v.str().empty();
  if (v.is_list()) return !v.list().items.empty();
  if (v.is_dict()) return !v.dict().items.empty();
  return true;
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0.0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);  // e.g. "-1.2345e+17"
  bool neg = sci[0] == '-';
  if (neg) sci.erase(0, 1);
  std::size_t e = sci.find('e');
  std::string digits;
  for (std::size_t i = 0; i < e; ++i)
    if (sci[i] != '.') digits += sci[i];
  int exp = std::atoi(sci.c_str() + e + 1);
  std::string out = neg ? "-" : "";
  if (exp >= -4 && exp < 16) {  // Python's repr switches to exponent form outside [1e-4, 1e16)
    if (exp < 0) {
      out += "0." + std::string(static_cast<std::size_t>(-exp - 1), '0') + digits;
    } else if (static_cast<int>(digits.size()) <= exp + 1) {
      out += digits + std::string(static_cast<std::size_t>(exp + 1 - static_cast<int>(digits.size())), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<std::size_t>(exp + 1)) + "." +
             digits.substr(static_cast<std::size_t>(exp + 1));
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  std::snprintf(buf, sizeof buf, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
  out += buf;
  return out;
}

void append_str(std::string& out, const Value& v) {
  if (v.is_string()) {
    out += v.str();
  } else if (v.is_undefined()) {
  } else if (v.is_list() || v.is_dict()) {
    out += repr(v);
  } else if (v.is_none()) {
    out += "None";
  } else if (v.is_bool()) {
    out += v.boolean() ? "True" : "False";
  } else if (v.is_int()) {
    out += std::to_string(v.integer());
  } else if (v.is_float()) {
    out += float_repr(v.real());
  } else if (v.is_namespace()) {
    out += "<Namespace " + repr(make_list({})) + ">";
  } else {
    out += "<" + v.callable().name() + ">";
  }
}

std::string to_str(const Value& v) {
  std::string out;
  append_str(out, v);
  return out;
}

std::string repr(const Value& v) {
  if (v.is_string()) return pystr::repr(v.str());
  if (v.is_undefined()) return "Undefined";
  if (v.is_list()) {
    const List& l = v.list();
    std::string out = l.tuple ? "(" : "[";
    for (std::size_t i = 0; i < l.items.size(); ++i) {
      if (i) out += ", ";
      out += repr(l.items[i]);
    }
    if (l.tuple && l.items.size() == 1) out += ",";
    out += l.tuple ? ")" : "]";
    return out;
  }
  if (v.is_dict()) {
    std::string out = "{";
    bool first = true;
    for (const auto& [k, val] : v.dict().items) {
      if (!first) out += ", ";
      first = false;
      out += repr(k) + ": " + repr(val);
    }
    return out + "}";
  }
  return to_str(v);
}

bool equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    auto as_int = [](const Value& x) { return x.is_int() ? x.integer() : (x.boolean() ? 1 : 0); };
    return as_int(a) == as_int(b);
  }
  if (a.v.index() != b.v.index()) return false;
  if (a.is_string()) return a.str() == b.str();
  if (a.is_none() || a.is_undefined()) return true;
  if (a.is_list()) {
    const List& x = a.list();
    const List& y = b.list();
    if (x.tuple != y.tuple || x.items.size() != y.items.size()) return false;
    for (std::size_t i = 0; i < x.items.size(); ++i)
      if (!equal(x.items[i], y.items[i])) return false;
    return true;
  }
  if (a.is_dict()) {
    const Dict& x = a.dict();
    const Dict& y = b.dict();
    if (x.items.size() != y.items.size()) return false;
    for (const auto& [k, val] : x.items) {
      const Value* other = y.find(k);
      if (!other || !equal(val, *other)) return false;
    }
    return true;
  }
  if (a.is_namespace()) return &a.ns() == &b.ns();
  if (a.is_callable()) return &a.callable() == &b.callable();
  return false;
}

std::string type_name(const Value& v) {
  if (v.is_undefined()) return "Undefined";
  if (v.is_none()) return "NoneType";
  if (v.is_bool()) return "bool";
  if (v.is_int()) return "int";
  if (v.is_float()) return "float";
  if (v.is_string()) return "str";
  if (v.is_list()) return v.list().tuple ? "tuple" : "list";
  if (v.is_dict()) return "dict";
  if (v.is_namespace()) return "Namespace";
  return "function";
}

std::string type_repr(const Value& v) {
  if (v.is_none()) return "None";
  return "'" + type_name(v) + " object'";
}

bool iterate(const Value& v, std::vector<Value>& out) {
  out.clear();
  if (v.is_undefined()) return true;
  if (v.is_list()) {
    out = v.list().items;
    return true;
  }
  if (v.is_dict()) {
    for (const auto& kv : v.dict().items) out.push_back(kv.first);
    return true;
  }
  if (v.is_string()) {
    const std::string& s = v.str();
    for (std::size_t i = 0; i < s.size();) {
      std::size_t at = i;
      pystr::next_cp(s, i);
      out.emplace_back(s.substr(at, i - at));
    }
    return true;
  }
  return false;
}

namespace {

std::string json_key(const Value& k) {
  if (k.is_string()) return k.str();
  if (k.is_bool()) return k.boolean() ? "true" : "false";
  if (k.is_int()) return std::to_string(k.integer());
  if (k.is_float()) return float_repr(k.real());
  if (k.is_none()) return "null";
  throw std::string("keys must be str, int, float, bool or None, not " + type_name(k));
}

void write_json(std::string& out, const Value& v, const JsonStyle& st, int depth) {
  if (depth > 200) throw std::string("nesting too deep for JSON");
  std::string nl, pad, pad_in;
  bool pretty = st.indent >= 0 || st.indent_is_text;
  if (pretty) {
    std::string unit = st.indent_is_text ? st.indent_text : std::string(static_cast<std::size_t>(st.indent), ' ');
    nl = "\n";
    for (int i = 0; i < depth; ++i) pad += unit;
    pad_in = pad + unit;
  }
  if (v.is_string()) {
    pystr::append_json_string(out, v.str(), st.ensure_ascii);
  } else if (v.is_none()) {
    out += "null";
  } else if (v.is_bool()) {
    out += v.boolean() ? "true" : "false";
  } else if (v.is_int()) {
    out += std::to_string(v.integer());
  } else if (v.is_float()) {
    double d = v.real();
    out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d > 0 ? "Infinity" : "-Infinity") : float_repr(d);
  } else if (v.is_list()) {
    const auto& items = v.list().items;
    if (items.empty()) {
      out += "[]";
      return;
    }
    out += "[" + nl + pad_in;
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (i) out += st.item_sep + nl + pad_in;
      write_json(out, items[i], st, depth + 1);
    }
    out += nl + pad + "]";
  } else if (v.is_dict()) {
    std::vector<std::pair<std::string, const Value*>> entries;
    for (const auto& [k, val] : v.dict().items) entries.emplace_back(json_key(k), &val);
    if (entries.empty()) {
      out += "{}";
      return;
    }
    if (st.sort_keys)
      std::stable_sort(entries.begin(), entries.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
    out += "{" + nl + pad_in;
    for (std::size_t i = 0; i < entries.size(); ++i) {
      if (i) out += st.item_sep + nl + pad_in;
      pystr::append_json_string(out, entries[i].first, st.ensure_ascii);
      out += st.key_sep;
      write_json(out, *entries[i].second, st, depth + 1);
    }
    out += nl + pad + "}";
  } else {
    throw std::string("Object of type " + type_name(v) + " is not JSON serializable");
  }
}

}  // namespace

std::string to_json(const Value& v, const JsonStyle& style) {
  std::string out;
  write_json(out, v, style, 0);
  return out;
}

}  // namespace spore::nlp::tmpl
