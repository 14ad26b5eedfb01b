// The values a chat template computes with (NOTE [Chat templates]): Python's types as jinja2
// sees them (None, bool, int, float, str, list/tuple, insertion-ordered dict) plus jinja2's
// Undefined, callables (macros, bound methods, globals) and namespace(). Printing, truthiness,
// equality and ordering follow Python, because the reference renderer is Python.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "spore/json_limits.h"

namespace spore::nlp::tmpl {

struct Value;
class Interpreter;

// jinja2's default Undefined: prints empty, is falsy, iterates as empty; most other uses raise.
// `hint` is jinja2's message for it ("'dict object' has no attribute 'x'", "'x' is undefined").
struct Undefined {
  std::string hint;
};
struct None {};

// How deep lists, dicts and namespaces may nest inside each other: the JSON inputs' bound (NOTE
// [Hostile JSON]) plus as many levels again for what a template wraps around them. Printing,
// comparing, tojson and destroying a value recurse through it, so a template that nests a list
// in itself in a loop stops with kValue here instead of overflowing the stack.
inline constexpr int kMaxValueDepth = 2 * kMaxJsonDepth;

struct List {
  std::vector<Value> items;
  bool tuple = false;  // printed "(a, b)" instead of "[a, b]"
  int depth = 1;       // containers nested in it, itself included (set by make_list)
};

// Insertion-ordered (Python dicts are), looked up by Python equality of keys.
struct Dict {
  std::vector<std::pair<Value, Value>> items;
  int depth = 1;  // as List::depth, kept by set() and push()
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  void set(Value key, Value value);
  void push(Value key, Value value);  // a key known to be new (from a JSON object)
};

struct Namespace {
  Dict attrs;
};

struct CallArgs;

// Macros, callers, bound string/dict methods and globals such as raise_exception.
class Callable {
 public:
  virtual ~Callable() = default;
  virtual Value call(Interpreter& in, CallArgs& args) const = 0;
  virtual std::string name() const = 0;
};

struct Value {
  std::variant<Undefined, None, bool, std::int64_t, double, std::string, std::shared_ptr<List>,
               std::shared_ptr<Dict>, std::shared_ptr<const Callable>, std::shared_ptr<Namespace>>
      v;
  // A markupsafe.Markup string (from |safe or |escape): `markup + str` HTML-escapes the plain
  // side, as jinja2 does even with autoescape off (MiniCPM3's tool template depends on it).
  bool safe = false;

  Value() : v(Undefined{}) {}
  Value(None n) : v(n) {}
  Value(Undefined u) : v(std::move(u)) {}
  Value(bool b) : v(b) {}
  Value(int i) : v(std::int64_t{i}) {}
  Value(std::int64_t i) : v(i) {}
  Value(double d) : v(d) {}
  Value(std::string s) : v(std::move(s)) {}
  Value(const char* s) : v(std::string(s)) {}
  Value(std::shared_ptr<List> l) : v(std::move(l)) {}
  Value(std::shared_ptr<Dict> d) : v(std::move(d)) {}
  Value(std::shared_ptr<const Callable> c) : v(std::move(c)) {}
  Value(std::shared_ptr<Namespace> n) : v(std::move(n)) {}

  bool is_undefined() const { return std::holds_alternative<Undefined>(v); }
  bool is_none() const { return std::holds_alternative<None>(v); }
  bool is_bool() const { return std::holds_alternative<bool>(v); }
  bool is_int() const { return std::holds_alternative<std::int64_t>(v); }
  bool is_float() const { return std::holds_alternative<double>(v); }
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_string() const { return std::holds_alternative<std::string>(v); }
  bool is_list() const { return std::holds_alternative<std::shared_ptr<List>>(v); }
  bool is_dict() const { return std::holds_alternative<std::shared_ptr<Dict>>(v); }
  bool is_callable() const { return std::holds_alternative<std::shared_ptr<const Callable>>(v); }
  bool is_namespace() const { return std::holds_alternative<std::shared_ptr<Namespace>>(v); }

  const std::string& str() const { return std::get<std::string>(v); }
  const List& list() const { return *std::get<std::shared_ptr<List>>(v); }
  const Dict& dict() const { return *std::get<std::shared_ptr<Dict>>(v); }
  Namespace& ns() const { return *std::get<std::shared_ptr<Namespace>>(v); }
  const Callable& callable() const { return *std::get<std::shared_ptr<const Callable>>(v); }
  const Undefined& undefined() const { return std::get<Undefined>(v); }
  bool boolean() const { return std::get<bool>(v); }
  std::int64_t integer() const { return std::get<std::int64_t>(v); }
  double real() const { return std::get<double>(v); }
  double as_double() const;  // int, bool or float
};

// Container nesting of a value: 0 for a scalar, List/Dict depth, a namespace's attributes' depth.
int nesting(const Value& v);
// Throws kValue when a container holding `child` would nest deeper than kMaxValueDepth.
void check_nesting(const Value& child);
Value make_list(std::vector<Value> items, bool tuple = false);
Value make_dict();
Value make_markup(std::string s);
// markupsafe.escape: & < > " ' as HTML entities.
std::string html_escape(std::string_view s);

// Python's bool(x); Undefined is falsy.
bool truthy(const Value& v);
// Python's str(x) (what {{ x }} prints); Undefined prints "".
std::string to_str(const Value& v);
void append_str(std::string& out, const Value& v);
// Python's repr(x), as str() of a container prints its items.
std::string repr(const Value& v);
// Python's float repr: shortest round-trip digits, exponent form outside [1e-4, 1e16).
std::string float_repr(double d);
// Python's ==.
bool equal(const Value& a, const Value& b);
// "'dict object'", "'str object'", "None": jinja2's object_type_repr for messages.
std::string type_repr(const Value& v);
// Python's type name: "str", "int", "dict", ...
std::string type_name(const Value& v);

// The items a for loop, |list or `in` sees: list items, dict keys, string code points;
// Undefined is empty. Returns false for values that are not iterable.
bool iterate(const Value& v, std::vector<Value>& out);

// json.dumps(v, ensure_ascii=False, indent, separators, sort_keys) as transformers' tojson
// calls it. indent < 0 means None. Throws a message (std::string) for values JSON cannot hold.
struct JsonStyle {
  int indent = -1;
  std::string indent_text;  // used when indent was given as a string
  bool indent_is_text = false;
  std::string item_sep = ", ";
  std::string key_sep = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;
};
std::string to_json(const Value& v, const JsonStyle& style);

}  // namespace spore::nlp::tmpl
