// Expressions, with Python's semantics for operators and jinja2's for attribute and item
// access and for Undefined.
#include <cmath>
#include <limits>

#include "nlp/template/errors.h"
#include "nlp/template/interpreter.h"
#include "nlp/template/pystr.h"

namespace spore::nlp::tmpl {

// Bound methods of str, dict and list (builtins.cc).
bool has_method(const Value& self, const std::string& name);
Value make_method(const Value& self, const std::string& name);

Value CallArgs::get(std::size_t index, const char* name, Value fallback) const {
  if (index < pos.size()) return pos[index];
  for (const auto& [k, v] : kw)
    if (k == name) return v;
  return fallback;
}

bool CallArgs::has(std::size_t index, const char* name) const {
  if (index < pos.size()) return true;
  for (const auto& kv : kw)
    if (kv.first == name) return true;
  return false;
}

CallArgs Args::eval(Interpreter& in, int line) const {
  CallArgs a;
  a.line = line;
  for (const auto& e : pos) a.pos.push_back(e->eval(in));
  for (const auto& [k, e] : kw) a.kw.emplace_back(k, e->eval(in));
  return a;
}

void undefined_error(const Value& v, int line) {
  std::string hint = v.is_undefined() ? v.undefined().hint : "value is undefined";
  render_error(line, hint + " (jinja2 raises UndefinedError here: the template uses a value that is missing; "
                            "check the messages and kwargs it expects)");
}

Value get_attribute(const Value& obj, const std::string& name, int line) {
  if (obj.is_undefined()) undefined_error(obj, line);
  if (!name.empty() && name[0] == '_') return Value(Undefined{"access to attribute '" + name + "' is unsafe"});
  if (has_method(obj, name)) return make_method(obj, name);
  if (obj.is_dict()) {
    if (const Value* v = obj.dict().find(std::string_view(name))) return *v;
  } else if (obj.is_namespace()) {
    if (const Value* v = obj.ns().attrs.find(std::string_view(name))) return *v;
  }
  return Value(Undefined{type_repr(obj) + " has no attribute '" + name + "'"});
}

Value get_item(const Value& obj, const Value& key, int line) {
  if (obj.is_undefined()) undefined_error(obj, line);
  if (obj.is_dict()) {
    if (const Value* v = obj.dict().find(key)) return *v;
  } else if ((obj.is_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    std::int64_t i = key.is_int() ? key.integer() : (key.boolean() ? 1 : 0);
    if (obj.is_list()) {
      auto n = static_cast<std::int64_t>(obj.list().items.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return obj.list().items[static_cast<std::size_t>(i)];
    } else {
      std::vector<std::size_t> off = pystr::cp_offsets(obj.str());
      auto n = static_cast<std::int64_t>(off.size()) - 1;
      if (i < 0) i += n;
      if (i >= 0 && i < n)
        return Value(obj.str().substr(off[static_cast<std::size_t>(i)], off[static_cast<std::size_t>(i) + 1] - off[static_cast<std::size_t>(i)]));
    }
    return Value(Undefined{type_repr(obj) + " has no element " + repr(key)});
  }
  if (key.is_string()) return get_attribute(obj, key.str(), line);
  return Value(Undefined{type_repr(obj) + " has no element " + repr(key)});
}

Value Literal::eval(Interpreter&) const { return value; }

Value NameRef::eval(Interpreter& in) const { return in.lookup(name); }

Value ListLit::eval(Interpreter& in) const {
  std::vector<Value> out;
  out.reserve(items.size());
  for (const auto& e : items) out.push_back(e->eval(in));
  return make_list(std::move(out), tuple);
}

Value DictLit::eval(Interpreter& in) const {
  auto d = std::make_shared<Dict>();
  for (const auto& [k, v] : items) {
    Value key = k->eval(in);
    if (key.is_list() && !key.list().tuple) render_error(line, "unhashable type: 'list' used as a dict key");
    if (key.is_dict()) render_error(line, "unhashable type: 'dict' used as a dict key");
    d->set(std::move(key), v->eval(in));
  }
  return Value(d);
}

Value GetAttr::eval(Interpreter& in) const { return get_attribute(obj->eval(in), name, line); }

Value GetItem::eval(Interpreter& in) const { return get_item(obj->eval(in), key->eval(in), line); }

Value SliceExpr::eval(Interpreter& in) const {
  Value o = obj->eval(in);
  if (o.is_undefined()) undefined_error(o, line);
  auto bound = [&](const ExprPtr& e) -> std::optional<long> {
    if (!e) return std::nullopt;
    Value v = e->eval(in);
    if (v.is_none()) return std::nullopt;
    if (v.is_int()) return static_cast<long>(std::max<std::int64_t>(std::min<std::int64_t>(v.integer(), 1L << 40), -(1L << 40)));
    if (v.is_bool()) return v.boolean() ? 1 : 0;
    render_error(line, "slice indices must be integers or None, not " + type_name(v));
  };
  std::optional<long> a = bound(start), b = bound(stop), c = bound(step);
  long st = c ? *c : 1;
  if (st == 0) render_error(line, "slice step cannot be zero");
  if (o.is_list()) {
    const auto& items = o.list().items;
    std::vector<Value> out;
    for (long i : pystr::slice_indices(static_cast<long>(items.size()), a, b, st))
      out.push_back(items[static_cast<std::size_t>(i)]);
    return make_list(std::move(out), o.list().tuple);
  }
  if (o.is_string()) {
    std::vector<std::size_t> off = pystr::cp_offsets(o.str());
    std::string out;
    for (long i : pystr::slice_indices(static_cast<long>(off.size()) - 1, a, b, st)) {
      auto k = static_cast<std::size_t>(i);
      out.append(o.str(), off[k], off[k + 1] - off[k]);
    }
    Value r(std::move(out));
    r.safe = o.safe;
    return r;
  }
  render_error(line, "'" + type_name(o) + "' object is not subscriptable with a slice");
}

Value CallExpr::eval(Interpreter& in) const {
  Value f = fn->eval(in);
  if (f.is_undefined()) undefined_error(f, line);
  if (!f.is_callable()) render_error(line, "'" + type_name(f) + "' object is not callable");
  CallArgs a = args.eval(in, line);
  in.step(line);
  return f.callable().call(in, a);
}

Value FilterExpr::eval(Interpreter& in) const {
  Value v = input->eval(in);
  CallArgs a = args.eval(in, line);
  in.step(line);
  return fn(in, v, a);
}

Value TestExpr::eval(Interpreter& in) const {
  Value v = input->eval(in);
  CallArgs a = args.eval(in, line);
  bool r = fn(in, v, a);
  return Value(negated ? !r : r);
}

namespace {

bool checked_int(const std::string& op, std::int64_t a, std::int64_t b, std::int64_t& r) {
  if (op == "+") return !__builtin_add_overflow(a, b, &r);
  if (op == "-") return !__builtin_sub_overflow(a, b, &r);
  if (op == "*") return !__builtin_mul_overflow(a, b, &r);
  return false;
}

std::int64_t as_int(const Value& v) { return v.is_int() ? v.integer() : (v.boolean() ? 1 : 0); }

[[noreturn]] void operand_error(const std::string& op, const Value& a, const Value& b, int line) {
  if (op == "+" && a.is_string())
    render_error(line, "can only concatenate str (not \"" + type_name(b) + "\") to str");
  render_error(line, "unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'");
}

Value repeat(const Value& seq, std::int64_t n, int line, Interpreter& in) {
  if (n < 0) n = 0;
  std::size_t unit = seq.is_string() ? seq.str().size() : seq.list().items.size();
  std::size_t total = 0;
  if (__builtin_mul_overflow(unit, static_cast<std::size_t>(n), &total)) total = SIZE_MAX;
  in.step(line, seq.is_string() ? static_cast<std::size_t>(n) : total);
  if (seq.is_string()) {
    in.check_size(line, total);
    std::string out;
    for (std::int64_t i = 0; i < n; ++i) out += seq.str();
    Value r(std::move(out));
    r.safe = seq.safe;
    return r;
  }
  std::vector<Value> out;
  for (std::int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.list().items.begin(), seq.list().items.end());
  return make_list(std::move(out), seq.list().tuple);
}

}  // namespace

Value arithmetic(const std::string& op, const Value& a, const Value& b, int line, Interpreter& in) {
  if (a.is_undefined()) undefined_error(a, line);
  if (b.is_undefined()) undefined_error(b, line);
  if (a.is_number() && b.is_number()) {
    bool ints = !a.is_float() && !b.is_float();
    if (ints) {
      std::int64_t x = as_int(a), y = as_int(b), r = 0;
      if (op == "+" || op == "-" || op == "*") {
        if (!checked_int(op, x, y, r)) unsupported(line, "integer arithmetic beyond 64 bits");
        return Value(r);
      }
      if (op == "//" || op == "%") {
        if (y == 0) render_error(line, "integer division or modulo by zero");
        if (x == std::numeric_limits<std::int64_t>::min() && y == -1) unsupported(line, "integer arithmetic beyond 64 bits");
        std::int64_t q = x / y, m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) {
          q -= 1;
          m += y;
        }
        return Value(op == "//" ? q : m);
      }
      if (op == "**" && y >= 0) {
        std::int64_t acc = 1;
        for (std::int64_t i = 0; i < y; ++i) {
          if (__builtin_mul_overflow(acc, x, &acc)) unsupported(line, "integer arithmetic beyond 64 bits");
          if (acc == 0 || acc == 1) break;
          if (i > 64 && (acc == -1)) {  // (-1)**y
            acc = (y % 2) ? -1 : 1;
            break;
          }
        }
        return Value(acc);
      }
    }
    double x = a.as_double(), y = b.as_double();
    if (op == "+") return Value(x + y);
    if (op == "-") return Value(x - y);
    if (op == "*") return Value(x * y);
    if (op == "/") {
      if (y == 0) render_error(line, "division by zero");
      return Value(x / y);
    }
    if (op == "//" || op == "%") {  // CPython's float_divmod
      if (y == 0) render_error(line, "float division or modulo by zero");
      double mod = std::fmod(x, y);
      double div = (x - mod) / y;
      if (mod != 0) {
        if ((y < 0) != (mod < 0)) {
          mod += y;
          div -= 1.0;
        }
      } else {
        mod = std::copysign(0.0, y);
      }
      double floordiv = std::copysign(0.0, x / y);
      if (div != 0) {
        floordiv = std::floor(div);
        if (div - floordiv > 0.5) floordiv += 1.0;
      }
      return Value(op == "%" ? mod : floordiv);
    }
    if (op == "**") {
      if (x == 0 && y < 0) render_error(line, "0.0 cannot be raised to a negative power");
      return Value(std::pow(x, y));
    }
  }
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      in.check_size(line, a.str().size() + b.str().size());
      in.step(line, (a.str().size() + b.str().size()) / 1024);  // copying counts as work
      if (a.safe || b.safe)  // Markup.__add__/__radd__ escape the plain operand
        return make_markup((a.safe ? a.str() : html_escape(a.str())) + (b.safe ? b.str() : html_escape(b.str())));
      return Value(a.str() + b.str());
    }
    if (a.is_list() && b.is_list() && a.list().tuple == b.list().tuple) {
      in.step(line, a.list().items.size() + b.list().items.size());
      std::vector<Value> out = a.list().items;
      out.insert(out.end(), b.list().items.begin(), b.list().items.end());
      return make_list(std::move(out), a.list().tuple);
    }
  }
  if (op == "*") {
    if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) return repeat(a, as_int(b), line, in);
    if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) return repeat(b, as_int(a), line, in);
  }
  if (op == "%" && a.is_string()) unsupported(line, "printf-style string formatting ('...' % value)");
  operand_error(op, a, b, line);
}

int compare_values(const Value& a, const Value& b, int line) {
  if (a.is_undefined()) undefined_error(a, line);
  if (b.is_undefined()) undefined_error(b, line);
  if (a.is_number() && b.is_number()) {
    if (!a.is_float() && !b.is_float()) {
      std::int64_t x = as_int(a), y = as_int(b);
      return x < y ? -1 : x > y ? 1 : 0;
    }
    double x = a.as_double(), y = b.as_double();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    int c = a.str().compare(b.str());
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is_list() && b.is_list() && a.list().tuple == b.list().tuple) {
    const auto& x = a.list().items;
    const auto& y = b.list().items;
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (equal(x[i], y[i])) continue;
      return compare_values(x[i], y[i], line);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  render_error(line, "ordering not supported between instances of '" + type_name(a) + "' and '" + type_name(b) + "'");
}

bool contains(const Value& container, const Value& item, int line) {
  if (container.is_string()) {
    if (item.is_undefined()) undefined_error(item, line);
    if (!item.is_string()) render_error(line, "'in <string>' requires string as left operand, not " + type_name(item));
    return container.str().find(item.str()) != std::string::npos;
  }
  if (container.is_list()) {
    for (const auto& v : container.list().items)
      if (equal(v, item)) return true;
    return false;
  }
  if (container.is_dict()) return container.dict().find(item) != nullptr;
  if (container.is_undefined()) return false;
  render_error(line, "argument of type '" + type_name(container) + "' is not iterable");
}

Value UnaryExpr::eval(Interpreter& in) const {
  Value v = operand->eval(in);
  if (op == "not") return Value(!truthy(v));
  if (v.is_undefined()) undefined_error(v, line);
  if (!v.is_number()) render_error(line, "bad operand type for unary " + op + ": '" + type_name(v) + "'");
  if (op == "+") return v.is_bool() ? Value(as_int(v)) : v;
  if (v.is_float()) return Value(-v.real());
  std::int64_t i = as_int(v);
  if (i == std::numeric_limits<std::int64_t>::min()) unsupported(line, "integer arithmetic beyond 64 bits");
  return Value(-i);
}

Value BinaryExpr::eval(Interpreter& in) const {
  Value a = left->eval(in);
  Value b = right->eval(in);
  if (op == "~") {
    std::string s = to_str(a);
    append_str(s, b);
    in.check_size(line, s.size());
    in.step(line, s.size() / 1024);
    return Value(std::move(s));
  }
  return arithmetic(op, a, b, line, in);
}

Value LogicExpr::eval(Interpreter& in) const {
  Value a = left->eval(in);
  if (is_and ? !truthy(a) : truthy(a)) return a;
  return right->eval(in);
}

Value CompareExpr::eval(Interpreter& in) const {
  Value a = first->eval(in);
  for (const auto& [op, e] : rest) {
    Value b = e->eval(in);
    bool ok;
    if (op == "==") {
      ok = equal(a, b);
    } else if (op == "!=") {
      ok = !equal(a, b);
    } else if (op == "in") {
      ok = contains(b, a, line);
    } else if (op == "notin") {
      ok = !contains(b, a, line);
    } else {
      int c = compare_values(a, b, line);
      ok = op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
    }
    if (!ok) return Value(false);
    a = std::move(b);
  }
  return Value(true);
}

Value CondExpr::eval(Interpreter& in) const {
  if (truthy(cond->eval(in))) return then->eval(in);
  if (otherwise) return otherwise->eval(in);
  return Value(Undefined{"the conditional expression has no else branch"});
}

}  // namespace spore::nlp::tmpl
