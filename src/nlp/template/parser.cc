// Recursive-descent parser following jinja2's grammar (parser.py): the same precedence
// (condexpr < or < and < not < compare < + - < ~ < * / // % < ** < unary < postfix/filters).
#include <set>

#include "nlp/template/ast.h"
#include "nlp/template/errors.h"
#include "nlp/template/lexer.h"

namespace spore::nlp::tmpl {
namespace {

constexpr int kMaxNesting = 256;  // keeps evaluation recursion bounded on hostile input

class Parser {
 public:
  explicit Parser(std::vector<Token> toks) : t_(std::move(toks)) {}

  std::unique_ptr<Program> run() {
    auto prog = std::make_unique<Program>();
    std::string end = parse_body(prog->body, {});
    (void)end;
    return prog;
  }

 private:
  const Token& cur() const { return t_[i_]; }
  const Token& peek(std::size_t k = 1) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
  Token next() { return t_[i_ < t_.size() - 1 ? i_++ : i_]; }
  bool is_op(const char* op) const { return cur().kind == Tok::kOp && cur().text == op; }
  bool is_name(const char* n) const { return cur().kind == Tok::kName && cur().text == n; }
  [[noreturn]] void fail(const std::string& what) const { syntax_error(cur().line, cur().col, what); }
  std::string describe(const Token& t) const {
    switch (t.kind) {
      case Tok::kEof: return "end of template";
      case Tok::kBlockEnd: return "end of statement block '%}'";
      case Tok::kVarEnd: return "end of print statement '}}'";
      case Tok::kData: return "template data";
      case Tok::kString: return "string literal";
      default: return "'" + t.text + "'";
    }
  }
  void expect_op(const char* op) {
    if (!is_op(op)) fail(std::string("expected '") + op + "', got " + describe(cur()));
    next();
  }
  void expect_block_end() {
    if (cur().kind != Tok::kBlockEnd) fail("expected end of statement block '%}', got " + describe(cur()));
    next();
  }
  std::string expect_name() {
    if (cur().kind != Tok::kName) fail("expected a name, got " + describe(cur()));
    return next().text;
  }

  struct Depth {
    explicit Depth(Parser& p) : p_(p) {
      if (++p_.depth_ > kMaxNesting) p_.fail("template nests deeper than " + std::to_string(kMaxNesting) + " levels");
    }
    ~Depth() { --p_.depth_; }
    Parser& p_;
  };

  // Left-leaning chains (a.b.c, x|f|g, 1+2+3) nest the tree without recursing the parser; each
  // link counts toward the nesting limit too, so evaluation depth stays bounded.
  struct Chain {
    explicit Chain(Parser& p) : p_(p) {}
    void link() {
      ++n_;
      if (++p_.depth_ > kMaxNesting) p_.fail("expression nests deeper than " + std::to_string(kMaxNesting) + " levels");
    }
    ~Chain() { p_.depth_ -= n_; }
    Parser& p_;
    int n_ = 0;
  };

  // Parses statements until a block tag whose name is in `ends`; returns that name (the tag's
  // name token is consumed, the rest of the tag is left for the caller).
  std::string parse_body(Body& body, const std::set<std::string>& ends) {
    Depth d(*this);
    while (true) {
      const Token& tok = cur();
      if (tok.kind == Tok::kEof) {
        if (!ends.empty()) {
          std::string names;
          for (const auto& e : ends) names += (names.empty() ? "'" : " or '") + e + "'";
          fail("unexpected end of template; expected " + names + " to close the block opened before");
        }
        return "";
      }
      if (tok.kind == Tok::kData) {
        auto s = std::make_unique<TextStmt>();
        s->line = tok.line;
        s->text = tok.text;
        body.push_back(std::move(s));
        next();
      } else if (tok.kind == Tok::kVarBegin) {
        next();
        auto s = std::make_unique<OutputStmt>();
        s->line = tok.line;
        s->expr = parse_tuple(true);
        if (cur().kind != Tok::kVarEnd) fail("expected end of print statement '}}', got " + describe(cur()));
        next();
        body.push_back(std::move(s));
      } else if (tok.kind == Tok::kBlockBegin) {
        next();
        if (cur().kind != Tok::kName) fail("expected a statement name after '{%', got " + describe(cur()));
        std::string name = cur().text;
        if (ends.count(name)) {
          next();
          return name;
        }
        body.push_back(parse_statement());
      } else {
        fail("unexpected " + describe(tok));
      }
    }
  }

  StmtPtr parse_statement() {
    Token tok = next();
    const std::string& n = tok.text;
    if (n == "if") return parse_if(tok.line);
    if (n == "for") return parse_for(tok.line);
    if (n == "set") return parse_set(tok.line);
    if (n == "macro") return parse_macro(tok.line);
    if (n == "call") return parse_call_block(tok.line);
    if (n == "with" || n == "generation") return parse_scoped(tok.line, n);
    if (n == "break" || n == "continue") {
      if (loop_depth_ == 0) syntax_error(tok.line, tok.col, "'" + n + "' outside of a for loop");
      auto s = std::make_unique<LoopControlStmt>();
      s->line = tok.line;
      s->is_break = n == "break";
      expect_block_end();
      return s;
    }
    static const std::set<std::string> known_unsupported = {
        "extends", "block", "include", "import", "from", "filter", "autoescape", "trans", "do", "print", "raw"};
    if (known_unsupported.count(n)) unsupported(tok.line, "the '{% " + n + " %}' statement");
    syntax_error(tok.line, tok.col, "unknown statement '" + n + "'" +
                                        (n.rfind("end", 0) == 0 || n == "elif" || n == "else"
                                             ? " (no open block for it to close)"
                                             : ""));
  }

  StmtPtr parse_if(int line) {
    auto s = std::make_unique<IfStmt>();
    s->line = line;
    while (true) {
      ExprPtr cond = parse_tuple(false);
      expect_block_end();
      Body body;
      std::string end = parse_body(body, {"elif", "else", "endif"});
      s->branches.emplace_back(std::move(cond), std::move(body));
      if (end == "elif") continue;
      if (end == "else") {
        expect_block_end();
        parse_body(s->otherwise, {"endif"});
      }
      expect_block_end();
      return s;
    }
  }

  std::vector<std::string> parse_targets() {
    std::vector<std::string> names;
    bool paren = is_op("(");
    if (paren) next();
    names.push_back(expect_name());
    while (is_op(",")) {
      next();
      if (cur().kind != Tok::kName) break;
      names.push_back(expect_name());
    }
    if (paren) expect_op(")");
    return names;
  }

  StmtPtr parse_for(int line) {
    auto s = std::make_unique<ForStmt>();
    s->line = line;
    s->targets = parse_targets();
    if (!is_name("in")) fail("expected 'in' in for loop, got " + describe(cur()));
    next();
    s->iter = parse_tuple(false);  // no conditional expression: `if` filters the loop
    if (is_name("if")) {
      next();
      s->filter = parse_expression(true);
    }
    if (is_name("recursive")) unsupported(cur().line, "recursive for loops");
    expect_block_end();
    ++loop_depth_;
    std::string end = parse_body(s->body, {"endfor", "else"});
    --loop_depth_;
    if (end == "else") {
      expect_block_end();
      parse_body(s->otherwise, {"endfor"});
    }
    expect_block_end();
    return s;
  }

  StmtPtr parse_set(int line) {
    auto s = std::make_unique<SetStmt>();
    s->line = line;
    std::string first = expect_name();
    if (is_op(".")) {
      next();
      s->targets = {first};
      s->attr = expect_name();
    } else {
      s->targets = {first};
      while (is_op(",")) {
        next();
        s->targets.push_back(expect_name());
      }
    }
    if (is_op("=")) {
      next();
      s->value = parse_tuple(true);
      expect_block_end();
      return s;
    }
    if (s->targets.size() != 1) fail("a block set assigns one name");
    while (is_op("|")) {
      next();
      std::string fname = expect_name();
      Args a;
      if (is_op("(")) parse_call_args(a);
      if (!find_filter(fname)) unsupported(line, "the filter '" + fname + "'");
      s->filters.emplace_back(fname, std::move(a));
    }
    expect_block_end();
    parse_body(s->body, {"endset"});
    expect_block_end();
    return s;
  }

  void parse_signature(MacroDef& def) {
    expect_op("(");
    while (!is_op(")")) {
      if (!def.params.empty()) expect_op(",");
      if (is_op(")")) break;
      std::string p = expect_name();
      ExprPtr dflt;
      if (is_op("=")) {
        next();
        dflt = parse_expression(true);
      }
      def.params.emplace_back(p, std::move(dflt));
    }
    next();
  }

  StmtPtr parse_macro(int line) {
    auto s = std::make_unique<MacroStmt>();
    s->line = line;
    s->def = std::make_shared<MacroDef>();
    s->def->name = expect_name();
    parse_signature(*s->def);
    expect_block_end();
    int saved = loop_depth_;
    loop_depth_ = 0;
    parse_body(s->def->body, {"endmacro"});
    loop_depth_ = saved;
    if (cur().kind == Tok::kName) next();  // {% endmacro name %}
    expect_block_end();
    return s;
  }

  StmtPtr parse_call_block(int line) {
    auto s = std::make_unique<CallBlockStmt>();
    s->line = line;
    s->caller = std::make_shared<MacroDef>();
    s->caller->name = "caller";
    if (is_op("(")) parse_signature(*s->caller);
    ExprPtr e = parse_expression(true);
    auto* call = dynamic_cast<CallExpr*>(e.get());
    if (!call) syntax_error(line, 1, "'{% call %}' needs a macro call, like {% call m(x) %}");
    e.release();
    s->call.reset(call);
    expect_block_end();
    int saved = loop_depth_;
    loop_depth_ = 0;
    parse_body(s->caller->body, {"endcall"});
    loop_depth_ = saved;
    expect_block_end();
    return s;
  }

  StmtPtr parse_scoped(int line, const std::string& kind) {
    auto s = std::make_unique<ScopedBlockStmt>();
    s->line = line;
    if (kind == "with") {
      while (cur().kind != Tok::kBlockEnd) {
        if (!s->assigns.empty()) expect_op(",");
        std::string n = expect_name();
        expect_op("=");
        s->assigns.emplace_back(n, parse_expression(true));
      }
    }
    expect_block_end();
    parse_body(s->body, {kind == "with" ? "endwith" : "endgeneration"});
    expect_block_end();
    return s;
  }

  // ----- expressions -----

  template <typename T>
  std::unique_ptr<T> node(int line) {
    auto n = std::make_unique<T>();
    n->line = line;
    return n;
  }

  // a, b, c  (a tuple when there is a comma); explicit_parens: called after '('.
  ExprPtr parse_tuple(bool with_condexpr, bool explicit_parens = false) {
    int line = cur().line;
    std::vector<ExprPtr> items;
    bool comma = false;
    while (true) {
      if (!items.empty()) {
        if (!is_op(",")) break;
        next();
        comma = true;
      }
      if (cur().kind == Tok::kVarEnd || cur().kind == Tok::kBlockEnd || is_op(")") ||
          (!items.empty() && (is_name("if") && !with_condexpr)))
        break;
      items.push_back(parse_expression(with_condexpr));
      if (!is_op(",")) break;
    }
    if (items.empty()) {
      if (explicit_parens) {
        auto t = node<ListLit>(line);
        t->tuple = true;
        return t;
      }
      fail("expected an expression, got " + describe(cur()));
    }
    if (items.size() == 1 && !comma) return std::move(items[0]);
    auto t = node<ListLit>(line);
    t->items = std::move(items);
    t->tuple = true;
    return t;
  }

  ExprPtr parse_expression(bool with_condexpr) {
    Depth d(*this);
    return with_condexpr ? parse_condexpr() : parse_or();
  }

  ExprPtr parse_condexpr() {
    Chain chain(*this);
    int line = cur().line;
    ExprPtr e = parse_or();
    while (is_name("if")) {
      chain.link();
      next();
      auto c = node<CondExpr>(line);
      c->cond = parse_or();
      c->then = std::move(e);
      if (is_name("else")) {
        next();
        c->otherwise = parse_condexpr();
      }
      e = std::move(c);
    }
    return e;
  }

  ExprPtr parse_or() {
    Chain chain(*this);
    ExprPtr e = parse_and();
    while (is_name("or")) {
      chain.link();
      auto n = node<LogicExpr>(cur().line);
      next();
      n->left = std::move(e);
      n->right = parse_and();
      e = std::move(n);
    }
    return e;
  }

  ExprPtr parse_and() {
    Chain chain(*this);
    ExprPtr e = parse_not();
    while (is_name("and")) {
      chain.link();
      auto n = node<LogicExpr>(cur().line);
      n->is_and = true;
      next();
      n->left = std::move(e);
      n->right = parse_not();
      e = std::move(n);
    }
    return e;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      Depth d(*this);
      auto n = node<UnaryExpr>(cur().line);
      next();
      n->op = "not";
      n->operand = parse_not();
      return n;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    int line = cur().line;
    ExprPtr e = parse_math1();
    std::vector<std::pair<std::string, ExprPtr>> rest;
    while (true) {
      static const std::set<std::string> ops = {"==", "!=", "<", "<=", ">", ">="};
      if (cur().kind == Tok::kOp && ops.count(cur().text)) {
        std::string op = next().text;
        rest.emplace_back(op, parse_math1());
      } else if (is_name("in")) {
        next();
        rest.emplace_back("in", parse_math1());
      } else if (is_name("not") && peek().kind == Tok::kName && peek().text == "in") {
        next();
        next();
        rest.emplace_back("notin", parse_math1());
      } else {
        break;
      }
    }
    if (rest.empty()) return e;
    auto c = node<CompareExpr>(line);
    c->first = std::move(e);
    c->rest = std::move(rest);
    return c;
  }

  ExprPtr binary(std::string op, ExprPtr l, ExprPtr r, int line) {
    auto b = node<BinaryExpr>(line);
    b->op = std::move(op);
    b->left = std::move(l);
    b->right = std::move(r);
    return b;
  }

  ExprPtr parse_math1() {
    Chain chain(*this);
    ExprPtr e = parse_concat();
    while (is_op("+") || is_op("-")) {
      chain.link();
      Token op = next();
      e = binary(op.text, std::move(e), parse_concat(), op.line);
    }
    return e;
  }

  ExprPtr parse_concat() {
    Chain chain(*this);
    ExprPtr e = parse_math2();
    while (is_op("~")) {
      chain.link();
      Token op = next();
      e = binary("~", std::move(e), parse_math2(), op.line);
    }
    return e;
  }

  ExprPtr parse_math2() {
    Chain chain(*this);
    ExprPtr e = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      chain.link();
      Token op = next();
      e = binary(op.text, std::move(e), parse_pow(), op.line);
    }
    return e;
  }

  ExprPtr parse_pow() {
    Chain chain(*this);
    ExprPtr e = parse_unary(true);
    while (is_op("**")) {
      chain.link();
      Token op = next();
      e = binary("**", std::move(e), parse_unary(true), op.line);
    }
    return e;
  }

  ExprPtr parse_unary(bool with_filter) {
    Depth d(*this);
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      auto u = node<UnaryExpr>(cur().line);
      u->op = next().text;
      u->operand = parse_unary(false);
      e = std::move(u);
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    if (with_filter) e = parse_filter_expr(std::move(e));
    return e;
  }

  ExprPtr parse_primary() {
    const Token& tok = cur();
    int line = tok.line;
    if (tok.kind == Tok::kName) {
      std::string n = next().text;
      auto lit = node<Literal>(line);
      if (n == "true" || n == "True") {
        lit->value = Value(true);
      } else if (n == "false" || n == "False") {
        lit->value = Value(false);
      } else if (n == "none" || n == "None") {
        lit->value = Value(None{});
      } else {
        auto r = node<NameRef>(line);
        r->name = n;
        return r;
      }
      return lit;
    }
    if (tok.kind == Tok::kString) {
      std::string s;
      while (cur().kind == Tok::kString) s += next().text;  // adjacent literals concatenate
      auto lit = node<Literal>(line);
      lit->value = Value(std::move(s));
      return lit;
    }
    if (tok.kind == Tok::kInt || tok.kind == Tok::kFloat) {
      auto lit = node<Literal>(line);
      lit->value = tok.kind == Tok::kInt ? Value(tok.int_value) : Value(tok.float_value);
      next();
      return lit;
    }
    if (is_op("(")) {
      next();
      ExprPtr e = parse_tuple(true, true);
      expect_op(")");
      return e;
    }
    if (is_op("[")) {
      next();
      auto l = node<ListLit>(line);
      while (!is_op("]")) {
        if (!l->items.empty()) expect_op(",");
        if (is_op("]")) break;
        l->items.push_back(parse_expression(true));
      }
      next();
      return l;
    }
    if (is_op("{")) {
      next();
      auto d = node<DictLit>(line);
      while (!is_op("}")) {
        if (!d->items.empty()) expect_op(",");
        if (is_op("}")) break;
        ExprPtr k = parse_expression(true);
        expect_op(":");
        d->items.emplace_back(std::move(k), parse_expression(true));
      }
      next();
      return d;
    }
    fail("unexpected " + describe(tok));
  }

  ExprPtr parse_postfix(ExprPtr e) {
    Chain chain(*this);
    while (true) {
      chain.link();
      if (is_op(".")) {
        int line = next().line;
        if (cur().kind == Tok::kName) {
          auto a = node<GetAttr>(line);
          a->obj = std::move(e);
          a->name = next().text;
          e = std::move(a);
        } else if (cur().kind == Tok::kInt) {
          auto g = node<GetItem>(line);
          g->obj = std::move(e);
          auto lit = node<Literal>(line);
          lit->value = Value(next().int_value);
          g->key = std::move(lit);
          e = std::move(g);
        } else {
          fail("expected an attribute name after '.', got " + describe(cur()));
        }
      } else if (is_op("[")) {
        e = parse_subscript(std::move(e));
      } else if (is_op("(")) {
        auto c = node<CallExpr>(cur().line);
        c->fn = std::move(e);
        parse_call_args(c->args);
        e = std::move(c);
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr obj) {
    int line = next().line;  // '['
    ExprPtr parts[3];
    int colons = 0;
    while (!is_op("]")) {
      if (is_op(":")) {
        if (++colons > 2) fail("too many ':' in a slice");
        next();
        continue;
      }
      if (parts[colons]) fail("expected ':' or ']' in subscript, got " + describe(cur()));
      parts[colons] = parse_expression(true);
    }
    next();
    if (colons == 0) {
      if (!parts[0]) syntax_error(line, 1, "empty subscript '[]'");
      auto g = node<GetItem>(line);
      g->obj = std::move(obj);
      g->key = std::move(parts[0]);
      return g;
    }
    auto s = node<SliceExpr>(line);
    s->obj = std::move(obj);
    s->start = std::move(parts[0]);
    s->stop = std::move(parts[1]);
    s->step = std::move(parts[2]);
    return s;
  }

  void parse_call_args(Args& a) {
    expect_op("(");
    bool first = true;
    while (!is_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (is_op(")")) break;
      if (is_op("*") || is_op("**")) unsupported(cur().line, "'*args' / '**kwargs' in calls");
      if (cur().kind == Tok::kName && peek().kind == Tok::kOp && peek().text == "=") {
        std::string k = next().text;
        next();
        a.kw.emplace_back(k, parse_expression(true));
      } else {
        if (!a.kw.empty()) fail("a positional argument follows a keyword argument");
        a.pos.push_back(parse_expression(true));
      }
    }
    next();
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
    Chain chain(*this);
    while (true) {
      chain.link();
      if (is_op("|")) {
        next();
        auto f = node<FilterExpr>(cur().line);
        f->name = expect_name();
        while (is_op(".")) {  // dotted filter names
          next();
          f->name += '.';  // appended in two steps: GCC 12 warns (-Wrestrict) on "." + string
          f->name += expect_name();
        }
        f->fn = find_filter(f->name);
        if (!f->fn) unsupported(f->line, "the filter '" + f->name + "'");
        if (is_op("(")) parse_call_args(f->args);
        f->input = std::move(e);
        e = std::move(f);
      } else if (is_name("is")) {
        next();
        auto t = node<TestExpr>(cur().line);
        if (is_name("not")) {
          next();
          t->negated = true;
        }
        t->name = expect_name();
        // `is none`/`is true`/`is false` lex as names of literals; the test has that name too.
        t->fn = find_test(t->name);
        if (!t->fn) unsupported(t->line, "the test '" + t->name + "'");
        if (is_op("(")) {
          parse_call_args(t->args);
        } else if ((cur().kind == Tok::kName || cur().kind == Tok::kString || cur().kind == Tok::kInt ||
                    cur().kind == Tok::kFloat || is_op("[") || is_op("{")) &&
                   !is_name("else") && !is_name("or") && !is_name("and")) {
          if (is_name("is")) fail("'is' cannot follow a test's argument");
          ExprPtr arg = parse_primary();
          t->args.pos.push_back(parse_postfix(std::move(arg)));
        }
        t->input = std::move(e);
        e = std::move(t);
      } else if (is_op("(")) {
        auto c = node<CallExpr>(cur().line);
        c->fn = std::move(e);
        parse_call_args(c->args);
        e = std::move(c);
      } else {
        return e;
      }
    }
  }

  std::vector<Token> t_;
  std::size_t i_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

std::unique_ptr<Program> parse(std::string_view source) { return Parser(lex(source)).run(); }

}  // namespace spore::nlp::tmpl
