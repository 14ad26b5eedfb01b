// Statements: output, if, for (loop.*, else, filter, break/continue), set (plain, tuple,
// namespace attribute, block), macro and call, with/generation blocks.
#include "nlp/template/errors.h"
#include "nlp/template/interpreter.h"

namespace spore::nlp::tmpl {

const Value* Scope::find(const std::string& name) const {
  for (const Scope* s = this; s; s = s->parent.get())
    for (const auto& [k, v] : s->vars)
      if (k == name) return &v;
  return nullptr;
}

void Scope::set(const std::string& name, Value v) {
  for (auto& [k, old] : vars) {
    if (k == name) {
      old = std::move(v);
      return;
    }
  }
  vars.emplace_back(name, std::move(v));
}

Interpreter::Interpreter(std::size_t step_limit, std::size_t max_output_bytes)
    : root(std::make_shared<Scope>()), scope(root), step_limit_(step_limit), max_output_(max_output_bytes) {}

void Interpreter::step(int line, std::size_t n) {
  steps_ = (n > step_limit_ || steps_ > step_limit_ - n) ? step_limit_ + 1 : steps_ + n;  // saturating
  if (steps_ > step_limit_)
    throw Error(ErrorCode::kValue, "chat template line " + std::to_string(line) + ": rendering passed the step limit of " +
                                       std::to_string(step_limit_) +
                                       " (a loop without end, or far more work than a chat prompt needs); "
                                       "raise RenderOptions::step_limit if the template is legitimate");
}

void Interpreter::check_size(int line, std::size_t bytes) const {
  if (bytes > max_output_)
    render_error(line, "the text being built passed " + std::to_string(max_output_) +
                           " bytes (runaway repetition?); raise RenderOptions::max_output_bytes if legitimate");
}

Value Interpreter::lookup(const std::string& name) const {
  if (const Value* v = scope->find(name)) return *v;
  return Value(Undefined{"'" + name + "' is undefined"});
}

void Interpreter::exec_body(const Body& body) {
  for (const auto& s : body) {
    step(s->line);
    s->exec(*this);
    if (control != Control::kNone) return;
  }
}

std::string Interpreter::capture(const Body& body) {
  std::string buf;
  std::string* saved = out;
  out = &buf;
  try {
    exec_body(body);
  } catch (...) {
    out = saved;
    throw;
  }
  out = saved;
  return buf;
}

Value Interpreter::call_macro(const MacroDef& def, CallArgs& args, const Value* caller,
                              const std::shared_ptr<Scope>& closure) {
  if (call_depth >= 100)
    render_error(args.line, "macro '" + def.name + "' calls nest deeper than 100 (endless recursion?)");
  auto frame = std::make_shared<Scope>();
  frame->parent = closure ? closure : root;
  std::size_t npos = args.pos.size();
  std::vector<Value> extra_pos;
  for (std::size_t i = 0; i < npos; ++i) {
    if (i < def.params.size()) {
      frame->set(def.params[i].first, args.pos[i]);
    } else {
      extra_pos.push_back(args.pos[i]);
    }
  }
  auto extra_kw = std::make_shared<Dict>();
  for (auto& [k, v] : args.kw) {
    bool known = false;
    for (std::size_t i = 0; i < def.params.size(); ++i) {
      if (def.params[i].first == k) {
        if (i < npos) render_error(args.line, "macro '" + def.name + "' got multiple values for argument '" + k + "'");
        known = true;
      }
    }
    if (known) {
      frame->set(k, v);
    } else {
      extra_kw->set(Value(k), v);
    }
  }
  auto saved_scope = scope;
  scope = frame;
  ++call_depth;
  try {
    for (std::size_t i = npos; i < def.params.size(); ++i) {
      const auto& [pname, dflt] = def.params[i];
      bool given = false;
      for (const auto& kv : frame->vars) given = given || kv.first == pname;
      if (given) continue;
      frame->set(pname, dflt ? dflt->eval(*this) : Value(Undefined{"'" + pname + "' is undefined"}));
    }
    frame->set("varargs", make_list(std::move(extra_pos), true));
    frame->set("kwargs", Value(extra_kw));
    if (caller) frame->set("caller", *caller);
    std::string text = capture(def.body);
    control = Control::kNone;
    scope = saved_scope;
    --call_depth;
    return Value(std::move(text));
  } catch (...) {
    scope = saved_scope;
    --call_depth;
    throw;
  }
}

Value MacroValue::call(Interpreter& in, CallArgs& args) const {
  return in.call_macro(*def_, args, nullptr, closure_);
}

void TextStmt::exec(Interpreter& in) const {
  in.out->append(text);
  in.check_size(line, in.out->size());
}

void OutputStmt::exec(Interpreter& in) const {
  append_str(*in.out, expr->eval(in));
  in.check_size(line, in.out->size());
}

void IfStmt::exec(Interpreter& in) const {
  for (const auto& [cond, body] : branches) {
    if (truthy(cond->eval(in))) {
      in.exec_body(body);
      return;
    }
  }
  in.exec_body(otherwise);
}

namespace {

void bind_targets(Scope& s, const std::vector<std::string>& targets, const Value& item, int line) {
  if (targets.size() == 1) {
    s.set(targets[0], item);
    return;
  }
  std::vector<Value> parts;
  if (!iterate(item, parts) || item.is_undefined())
    render_error(line, "cannot unpack " + type_repr(item) + " into " + std::to_string(targets.size()) + " names");
  if (parts.size() != targets.size())
    render_error(line, "cannot unpack " + std::to_string(parts.size()) + " values into " +
                           std::to_string(targets.size()) + " names");
  for (std::size_t i = 0; i < targets.size(); ++i) s.set(targets[i], parts[i]);
}

// jinja2's LoopContext, as a dict the template reads attributes from.
class CycleFn : public Callable {
 public:
  explicit CycleFn(std::size_t index0) : index0_(index0) {}
  Value call(Interpreter&, CallArgs& args) const override {
    if (args.pos.empty()) render_error(args.line, "loop.cycle() needs at least one value");
    return args.pos[index0_ % args.pos.size()];
  }
  std::string name() const override { return "function cycle"; }

 private:
  std::size_t index0_;
};

}  // namespace

void ForStmt::exec(Interpreter& in) const {
  Value seq = iter->eval(in);
  std::vector<Value> items;
  if (!iterate(seq, items)) render_error(line, "'" + type_name(seq) + "' object is not iterable");
  if (filter) {
    std::vector<Value> kept;
    auto probe = std::make_shared<Scope>();
    probe->parent = in.scope;
    auto saved = in.scope;
    in.scope = probe;
    try {
      for (auto& it : items) {
        in.step(line);
        bind_targets(*probe, targets, it, line);
        if (truthy(filter->eval(in))) kept.push_back(std::move(it));
      }
    } catch (...) {
      in.scope = saved;
      throw;
    }
    in.scope = saved;
    items = std::move(kept);
  }
  if (items.empty()) {
    in.exec_body(otherwise);
    return;
  }
  auto saved = in.scope;
  const std::int64_t n = static_cast<std::int64_t>(items.size());
  try {
    for (std::int64_t i = 0; i < n; ++i) {
      in.step(line);
      auto frame = std::make_shared<Scope>();
      frame->parent = saved;
      bind_targets(*frame, targets, items[static_cast<std::size_t>(i)], line);
      // A fresh dict with distinct keys: append directly (Dict::set would compare every key).
      auto loop = std::make_shared<Dict>();
      auto& e = loop->items;
      e.reserve(12);
      e.emplace_back(Value("index"), Value(i + 1));
      e.emplace_back(Value("index0"), Value(i));
      e.emplace_back(Value("revindex"), Value(n - i));
      e.emplace_back(Value("revindex0"), Value(n - i - 1));
      e.emplace_back(Value("first"), Value(i == 0));
      e.emplace_back(Value("last"), Value(i == n - 1));
      e.emplace_back(Value("length"), Value(n));
      e.emplace_back(Value("depth"), Value(1));
      e.emplace_back(Value("depth0"), Value(0));
      // The neighbours are containers the template may nest further: push() keeps the depth.
      loop->push(Value("previtem"), i > 0 ? items[static_cast<std::size_t>(i - 1)]
                                          : Value(Undefined{"there is no previous item"}));
      loop->push(Value("nextitem"), i + 1 < n ? items[static_cast<std::size_t>(i + 1)]
                                              : Value(Undefined{"there is no next item"}));
      e.emplace_back(Value("cycle"), Value(std::shared_ptr<const Callable>(
                                         std::make_shared<CycleFn>(static_cast<std::size_t>(i)))));
      frame->set("loop", Value(loop));
      in.scope = frame;
      in.exec_body(body);
      in.scope = saved;
      if (in.control == Interpreter::Control::kBreak) {
        in.control = Interpreter::Control::kNone;
        break;
      }
      in.control = Interpreter::Control::kNone;
    }
  } catch (...) {
    in.scope = saved;
    throw;
  }
}

void SetStmt::exec(Interpreter& in) const {
  Value v;
  if (value) {
    v = value->eval(in);
  } else {
    v = Value(in.capture(body));
    for (const auto& [fname, args] : filters) {
      CallArgs a = args.eval(in, line);
      v = find_filter(fname)(in, v, a);
    }
  }
  if (!attr.empty()) {
    Value target = in.lookup(targets[0]);
    if (!target.is_namespace())
      render_error(line, "cannot assign attribute '" + attr + "' on " + type_repr(target) +
                             " (only a namespace() takes attributes: {% set ns = namespace() %})");
    if (!attr.empty() && attr[0] == '_') render_error(line, "namespace attributes cannot start with '_'");
    target.ns().attrs.set(Value(attr), std::move(v));
    return;
  }
  bind_targets(*in.scope, targets, v, line);
}

void MacroStmt::exec(Interpreter& in) const {
  // Macros see the template's top-level names (the root scope), as jinja2's do.
  in.scope->set(def->name, Value(std::shared_ptr<const Callable>(std::make_shared<MacroValue>(def, nullptr))));
}

void CallBlockStmt::exec(Interpreter& in) const {
  Value fn = call->fn->eval(in);
  if (!fn.is_callable()) render_error(line, "'{% call %}' needs a macro, got " + type_repr(fn));
  auto* macro = dynamic_cast<const MacroValue*>(&fn.callable());
  if (!macro) render_error(line, "'{% call %}' needs a macro, got " + fn.callable().name());
  Value caller(std::shared_ptr<const Callable>(std::make_shared<MacroValue>(this->caller, in.scope)));
  CallArgs args = call->args.eval(in, line);
  in.out->append(to_str(in.call_macro(*macro->def_, args, &caller, macro->closure_)));
}

void ScopedBlockStmt::exec(Interpreter& in) const {
  auto frame = std::make_shared<Scope>();
  frame->parent = in.scope;
  for (const auto& [name, e] : assigns) frame->set(name, e->eval(in));
  auto saved = in.scope;
  in.scope = frame;
  try {
    in.exec_body(body);
  } catch (...) {
    in.scope = saved;
    throw;
  }
  in.scope = saved;
}

void LoopControlStmt::exec(Interpreter& in) const {
  in.control = is_break ? Interpreter::Control::kBreak : Interpreter::Control::kContinue;
}

}  // namespace spore::nlp::tmpl
