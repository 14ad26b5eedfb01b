// The state of one render: the output being written, the variable scopes (jinja2's: a for
// iteration, a macro call and a with block each get one; if does not), loop control and the
// step limit that stops a template that would run without end (NOTE [Chat templates]).
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nlp/template/ast.h"
#include "nlp/template/value.h"

namespace spore::nlp::tmpl {

struct Scope {
  std::shared_ptr<Scope> parent;
  std::vector<std::pair<std::string, Value>> vars;
  const Value* find(const std::string& name) const;
  void set(const std::string& name, Value v);
};

class Interpreter {
 public:
  Interpreter(std::size_t step_limit, std::size_t max_output_bytes);

  std::shared_ptr<Scope> root;
  std::shared_ptr<Scope> scope;  // the innermost scope; each links to its parent
  std::string* out = nullptr;
  enum class Control { kNone, kBreak, kContinue } control = Control::kNone;
  int call_depth = 0;

  // Counts `n` steps of work; past the limit, rendering stops with a kValue error.
  void step(int line, std::size_t n = 1);
  // Errors when a string being built would pass the output cap (runaway repetition).
  void check_size(int line, std::size_t bytes) const;
  Value lookup(const std::string& name) const;
  void exec_body(const Body& body);
  // Runs `body` with output captured into a string.
  std::string capture(const Body& body);
  // Calls a macro definition with arguments; `caller` is bound when given.
  Value call_macro(const MacroDef& def, CallArgs& args, const Value* caller,
                   const std::shared_ptr<Scope>& closure);

 private:
  std::size_t steps_ = 0;
  std::size_t step_limit_;
  std::size_t max_output_;
};

// The callable that wraps a macro definition (and the scope it sees).
class MacroValue : public Callable {
 public:
  MacroValue(std::shared_ptr<const MacroDef> def, std::shared_ptr<Scope> closure)
      : def_(std::move(def)), closure_(std::move(closure)) {}
  Value call(Interpreter& in, CallArgs& args) const override;
  std::string name() const override { return "Macro '" + def_->name + "'"; }
  std::shared_ptr<const MacroDef> def_;
  std::shared_ptr<Scope> closure_;  // kept alive: a macro value may outlive the block that made it
};

// Attribute lookup as jinja2's sandbox does it: methods of str/dict/list first for `x.name`,
// then items. Returns Undefined (with jinja2's hint) when absent.
Value get_attribute(const Value& obj, const std::string& name, int line);
Value get_item(const Value& obj, const Value& key, int line);
// Raises jinja2's UndefinedError for a use of an Undefined that jinja2 rejects.
[[noreturn]] void undefined_error(const Value& v, int line);
// Python binary operators; `op` is one of + - * / // % **.
Value arithmetic(const std::string& op, const Value& a, const Value& b, int line, Interpreter& in);
// Python ordering for <, <=, >, >= (numbers, strings, lists); errors for other pairs.
int compare_values(const Value& a, const Value& b, int line);
bool contains(const Value& container, const Value& item, int line);
// Global functions (range, dict, namespace, raise_exception, strftime_now).
void install_globals(Scope& root);

}  // namespace spore::nlp::tmpl
