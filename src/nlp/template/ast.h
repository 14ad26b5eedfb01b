// The parsed template: expression and statement nodes, each evaluating itself against an
// Interpreter (expressions in eval_expr.cc, statements in exec_stmt.cc). Every node keeps its
// line so errors while rendering can name it.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nlp/template/value.h"

namespace spore::nlp::tmpl {

class Interpreter;

struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  int line = 0;
  // Argument `index` by position, or by keyword `name`, or `fallback`.
  Value get(std::size_t index, const char* name, Value fallback = Value()) const;
  bool has(std::size_t index, const char* name) const;
};

struct Expr {
  int line = 0;
  virtual ~Expr() = default;
  virtual Value eval(Interpreter& in) const = 0;
};
using ExprPtr = std::unique_ptr<Expr>;

struct Literal : Expr {
  Value value;
  Value eval(Interpreter& in) const override;
};
struct NameRef : Expr {
  std::string name;
  Value eval(Interpreter& in) const override;
};
struct ListLit : Expr {
  std::vector<ExprPtr> items;
  bool tuple = false;
  Value eval(Interpreter& in) const override;
};
struct DictLit : Expr {
  std::vector<std::pair<ExprPtr, ExprPtr>> items;
  Value eval(Interpreter& in) const override;
};
struct GetAttr : Expr {  // obj.name: attribute (method) first, then item
  ExprPtr obj;
  std::string name;
  Value eval(Interpreter& in) const override;
};
struct GetItem : Expr {  // obj[key]: item first, then attribute
  ExprPtr obj, key;
  Value eval(Interpreter& in) const override;
};
struct SliceExpr : Expr {
  ExprPtr obj, start, stop, step;
  Value eval(Interpreter& in) const override;
};
struct Args {
  std::vector<ExprPtr> pos;
  std::vector<std::pair<std::string, ExprPtr>> kw;
  CallArgs eval(Interpreter& in, int line) const;
};
struct CallExpr : Expr {
  ExprPtr fn;
  Args args;
  Value eval(Interpreter& in) const override;
};
using FilterFn = Value (*)(Interpreter& in, const Value& input, CallArgs& args);
using TestFn = bool (*)(Interpreter& in, const Value& input, CallArgs& args);
struct FilterExpr : Expr {
  ExprPtr input;
  std::string name;
  FilterFn fn = nullptr;
  Args args;
  Value eval(Interpreter& in) const override;
};
struct TestExpr : Expr {
  ExprPtr input;
  std::string name;
  TestFn fn = nullptr;
  Args args;
  bool negated = false;
  Value eval(Interpreter& in) const override;
};
struct UnaryExpr : Expr {
  std::string op;  // "-", "+", "not"
  ExprPtr operand;
  Value eval(Interpreter& in) const override;
};
struct BinaryExpr : Expr {
  std::string op;  // + - * / // % ** ~
  ExprPtr left, right;
  Value eval(Interpreter& in) const override;
};
struct LogicExpr : Expr {
  bool is_and = false;
  ExprPtr left, right;
  Value eval(Interpreter& in) const override;
};
struct CompareExpr : Expr {
  ExprPtr first;
  std::vector<std::pair<std::string, ExprPtr>> rest;  // ==, !=, <, <=, >, >=, in, notin
  Value eval(Interpreter& in) const override;
};
struct CondExpr : Expr {
  ExprPtr cond, then, otherwise;  // otherwise may be null (an Undefined then)
  Value eval(Interpreter& in) const override;
};

struct Stmt {
  int line = 0;
  virtual ~Stmt() = default;
  virtual void exec(Interpreter& in) const = 0;
};
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct TextStmt : Stmt {
  std::string text;
  void exec(Interpreter& in) const override;
};
struct OutputStmt : Stmt {
  ExprPtr expr;
  void exec(Interpreter& in) const override;
};
struct IfStmt : Stmt {
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body otherwise;
  void exec(Interpreter& in) const override;
};
struct ForStmt : Stmt {
  std::vector<std::string> targets;  // several: unpack each item
  ExprPtr iter, filter;
  Body body, otherwise;
  void exec(Interpreter& in) const override;
};
struct SetStmt : Stmt {
  std::vector<std::string> targets;  // several: unpack the value
  std::string attr;                  // set ns.attr = value (targets holds ns)
  ExprPtr value;                     // null for a block set
  Body body;                         // block set: the rendered body
  std::vector<std::pair<std::string, Args>> filters;  // {% set x | f %}...{% endset %}
  void exec(Interpreter& in) const override;
};
struct MacroDef {
  std::string name;
  std::vector<std::pair<std::string, ExprPtr>> params;  // default may be null
  Body body;
  bool uses_caller = false;
};
struct MacroStmt : Stmt {
  std::shared_ptr<MacroDef> def;
  void exec(Interpreter& in) const override;
};
struct CallBlockStmt : Stmt {
  std::unique_ptr<CallExpr> call;
  std::shared_ptr<MacroDef> caller;  // the block body as a macro named "caller"
  void exec(Interpreter& in) const override;
};
struct ScopedBlockStmt : Stmt {  // {% with %} and {% generation %}: a body in its own scope
  std::vector<std::pair<std::string, ExprPtr>> assigns;
  Body body;
  void exec(Interpreter& in) const override;
};
struct LoopControlStmt : Stmt {
  bool is_break = false;
  void exec(Interpreter& in) const override;
};

struct Program {
  Body body;
};

// Parses the tokens of one template; syntax errors carry line and column.
std::unique_ptr<Program> parse(std::string_view source);

// Filter and test lookup (builtins.cc); null when the name is unknown.
FilterFn find_filter(const std::string& name);
TestFn find_test(const std::string& name);

}  // namespace spore::nlp::tmpl
