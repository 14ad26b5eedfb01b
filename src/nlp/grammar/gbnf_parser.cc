// GBNF text -> Grammar::Impl (NOTE [Grammars]). The syntax is llama.cpp's (grammars/README.md):
// `name ::= alternatives`, "literals", [character classes] with ^, `.`, ( groups ), |, the
// repetitions * + ? {m} {m,} {m,n} {,n}, # comments; a newline ends a rule unless it is inside
// parentheses or follows |. Escapes: \n \r \t \\ \" \[ \] \- \^ \xHH \uHHHH \UHHHHHHHH.
#include <string>
#include <unordered_map>

#include "nlp/grammar/grammar_impl.h"
#include "nlp/grammar/matcher.h"
#include "spore/error.h"

namespace spore::nlp {

namespace {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

class Parser {
 public:
  Parser(std::string_view text, const GrammarLimits& limits) : s_(text), lim_(limits) {}

  Grammar::Impl parse(std::string_view root_name) {
    if (s_.size() > lim_.max_text_bytes)
      fail("the grammar is " + std::to_string(s_.size()) + " bytes, more than the limit of " +
           std::to_string(lim_.max_text_bytes));
    skip(true);
    while (p_ < s_.size()) {
      const size_t start = p_;
      const std::string name = parse_name();
      skip(false);
      if (s_.substr(p_, 3) != "::=") fail("expected '::=' after the rule name '" + name + "'");
      p_ += 3;
      skip(true);
      const int32_t r = rule(name, start);
      if (defined_[(size_t)r]) fail("the rule '" + name + "' is defined twice; merge its alternatives with |");
      defined_[(size_t)r] = true;
      rules_[(size_t)r] = parse_alternatives(false, 0);
      if (p_ < s_.size() && s_[p_] != '\n' && s_[p_] != '\r') fail("unexpected character '" + std::string(1, s_[p_]) + "'");
      skip(true);
    }
    if (rules_.empty()) fail("the grammar is empty; define at least `" + std::string(root_name) + " ::= ...`");
    for (size_t r = 0; r < rules_.size(); ++r)
      if (!defined_[r]) {
        p_ = first_use_[r];
        fail("the rule '" + names_[r] + "' is used but never defined; add `" + names_[r] + " ::= ...`");
      }
    auto root = ids_.find(std::string(root_name));
    if (root == ids_.end()) {
      p_ = 0;
      fail("there is no rule '" + std::string(root_name) + "', the start symbol; define `" + std::string(root_name) + " ::= ...`");
    }
    Grammar::Impl g;
    g.root = root->second;
    g.names = names_;
    g.ranges = std::move(ranges_);
    g.limits = lim_;
    g.alternatives.resize(rules_.size());
    g.symbols.reserve(symbols_ + 2 * rules_.size());
    for (size_t r = 0; r < rules_.size(); ++r)
      for (const auto& alt : rules_[r]) {
        g.alternatives[r].push_back((int32_t)g.symbols.size());
        g.symbols.insert(g.symbols.end(), alt.begin(), alt.end());
        g.symbols.push_back(Symbol{});
      }
    return g;
  }

 private:
  using Seq = std::vector<Symbol>;

  [[noreturn]] void fail(const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < p_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') ++line, col = 1;
      else ++col;
    }
    throw Error(ErrorCode::kValue, "grammar: line " + std::to_string(line) + ", column " + std::to_string(col) + ": " + what);
  }

  // Spaces, tabs and comments; newlines too when `newlines`.
  void skip(bool newlines) {
    while (p_ < s_.size()) {
      const char c = s_[p_];
      if (c == ' ' || c == '\t' || (newlines && (c == '\n' || c == '\r'))) {
        ++p_;
      } else if (c == '#') {
        while (p_ < s_.size() && s_[p_] != '\n') ++p_;
      } else {
        break;
      }
    }
  }

  std::string parse_name() {
    const size_t b = p_;
    while (p_ < s_.size() && is_name_char(s_[p_])) ++p_;
    if (p_ == b) fail(p_ < s_.size() ? "expected a rule name (letters, digits, -), got '" + std::string(1, s_[p_]) + "'"
                                     : "expected a rule name, got the end of the text");
    return std::string(s_.substr(b, p_ - b));
  }

  int32_t rule(const std::string& name, size_t at) {
    auto it = ids_.find(name);
    if (it != ids_.end()) return it->second;
    return add_rule(name, at);
  }
  int32_t add_rule(const std::string& name, size_t at) {
    if (rules_.size() >= lim_.max_rules)
      fail("more than " + std::to_string(lim_.max_rules) + " rules (groups and repetitions count too)");
    const int32_t id = (int32_t)rules_.size();
    ids_.emplace(name, id);
    names_.push_back(name);
    rules_.emplace_back();
    defined_.push_back(false);
    first_use_.push_back(at);
    return id;
  }
  // A rule for a group or repetition, named after the rule being parsed (as llama.cpp does).
  int32_t generated_rule(std::vector<Seq> alts) {
    std::string name;
    // append, not "x" + a temporary: GCC 12 warns falsely there (-Wrestrict, GCC bug 105329).
    do name = std::string(1, 'g').append(std::to_string(++generated_)); while (ids_.count(name));
    const int32_t id = add_rule(name, p_);
    defined_[(size_t)id] = true;
    rules_[(size_t)id] = std::move(alts);
    return id;
  }

  void count(size_t n) {
    symbols_ += n;
    if (symbols_ > lim_.max_elements)
      fail("the grammar expands to more than " + std::to_string(lim_.max_elements) + " symbols (repetitions are expanded)");
  }

  std::vector<Seq> parse_alternatives(bool nested, int depth) {
    if (depth > lim_.max_nesting) fail("parentheses nest deeper than " + std::to_string(lim_.max_nesting));
    std::vector<Seq> alts;
    alts.push_back(parse_sequence(nested, depth));
    while (p_ < s_.size() && s_[p_] == '|') {
      ++p_;
      skip(true);
      alts.push_back(parse_sequence(nested, depth));
    }
    return alts;
  }

  uint32_t hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      if (p_ >= s_.size()) fail("a \\x, \\u or \\U escape ends early");
      const char c = s_[p_++];
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) fail(std::string(1, '\'').append(1, c).append("' is not a hex digit in an escape"));
      v = v * 16 + (uint32_t)d;
    }
    if (v > kMaxCodePoint) fail("the escape names code point " + std::to_string(v) + ", past U+10FFFF");
    return v;
  }

  // One character of a literal or class (escapes decoded, UTF-8 decoded).
  uint32_t parse_char() {
    if (p_ >= s_.size()) fail("the text ends inside a literal or character class; close it");
    const unsigned char c = (unsigned char)s_[p_];
    if (c == '\\') {
      ++p_;
      if (p_ >= s_.size()) fail("the text ends after a backslash");
      const char e = s_[p_++];
      switch (e) {
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case 'x': return hex(2);
        case 'u': return hex(4);
        case 'U': return hex(8);
        case '\\': case '"': case '[': case ']': case '-': case '^': case '/': return (uint32_t)e;
        default: fail(std::string("unknown escape \\") + e + "; use \\n \\r \\t \\\\ \\\" \\[ \\] \\xHH \\uHHHH or \\UHHHHHHHH");
      }
    }
    const int n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 0 || p_ + (size_t)n > s_.size()) fail("invalid UTF-8 in the grammar text");
    uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (int i = 1; i < n; ++i) {
      const unsigned char d = (unsigned char)s_[p_ + (size_t)i];
      if ((d & 0xC0) != 0x80) fail("invalid UTF-8 in the grammar text");
      cp = (cp << 6) | (d & 0x3F);
    }
    if (cp > kMaxCodePoint) fail("invalid UTF-8 in the grammar text");
    p_ += (size_t)n;
    return cp;
  }

  Symbol char_symbol(bool negated, const std::vector<std::pair<uint32_t, uint32_t>>& rs) {
    Symbol s;
    s.kind = negated ? Symbol::kCharNot : Symbol::kChar;
    s.a = (int32_t)ranges_.size();
    ranges_.insert(ranges_.end(), rs.begin(), rs.end());
    s.b = (int32_t)ranges_.size();
    return s;
  }

  int parse_count() {
    const size_t b = p_;
    long v = 0;
    while (p_ < s_.size() && s_[p_] >= '0' && s_[p_] <= '9') {
      v = v * 10 + (s_[p_++] - '0');
      if (v > lim_.max_repetition) fail("a repetition count is above the limit of " + std::to_string(lim_.max_repetition));
    }
    if (p_ == b) fail("expected a number in {m,n}");
    return (int)v;
  }

  Seq parse_sequence(bool nested, int depth) {
    Seq seq;
    size_t last = seq.size();  // where the last item (what a repetition applies to) starts
    skip(nested);
    while (p_ < s_.size()) {
      const char c = s_[p_];
      if (c == '"') {
        ++p_;
        last = seq.size();
        while (p_ < s_.size() && s_[p_] != '"') {
          const uint32_t cp = parse_char();
          seq.push_back(char_symbol(false, {{cp, cp}}));
          count(1);
        }
        if (p_ >= s_.size()) fail("a string literal is not closed; add '\"'");
        ++p_;
      } else if (c == '[') {
        ++p_;
        last = seq.size();
        bool neg = false;
        if (p_ < s_.size() && s_[p_] == '^') neg = true, ++p_;
        std::vector<std::pair<uint32_t, uint32_t>> rs;
        while (p_ < s_.size() && s_[p_] != ']') {
          const uint32_t lo = parse_char();
          uint32_t hi = lo;
          if (p_ + 1 < s_.size() && s_[p_] == '-' && s_[p_ + 1] != ']') {
            ++p_;
            hi = parse_char();
            if (hi < lo) fail("a character range runs backwards (" + std::to_string(lo) + " > " + std::to_string(hi) + ")");
          }
          rs.emplace_back(lo, hi);
        }
        if (p_ >= s_.size()) fail("a character class is not closed; add ']'");
        ++p_;
        seq.push_back(char_symbol(neg, rs));
        count(1);
      } else if (c == '.') {
        ++p_;
        last = seq.size();
        seq.push_back(char_symbol(true, {}));
        count(1);
      } else if (is_name_char(c)) {
        last = seq.size();
        const size_t at = p_;
        const std::string name = parse_name();
        Symbol s;
        s.kind = Symbol::kRef;
        s.a = rule(name, at);
        seq.push_back(s);
        count(1);
      } else if (c == '(') {
        ++p_;
        skip(true);
        std::vector<Seq> alts = parse_alternatives(true, depth + 1);
        if (p_ >= s_.size() || s_[p_] != ')') fail("a '(' is not closed; add ')'");
        ++p_;
        last = seq.size();
        Symbol s;
        s.kind = Symbol::kRef;
        s.a = generated_rule(std::move(alts));
        seq.push_back(s);
        count(1);
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (last >= seq.size()) fail(std::string("'") + c + "' follows nothing it could repeat");
        ++p_;
        int lo = 0, hi = -1;  // hi -1: unbounded
        if (c == '+') lo = 1;
        else if (c == '?') hi = 1;
        else if (c == '{') {
          skip(false);
          if (p_ < s_.size() && s_[p_] == ',') {
            lo = 0;
          } else {
            lo = parse_count();
          }
          skip(false);
          if (p_ < s_.size() && s_[p_] == ',') {
            ++p_;
            skip(false);
            hi = p_ < s_.size() && s_[p_] == '}' ? -1 : parse_count();
          } else {
            hi = lo;
          }
          skip(false);
          if (p_ >= s_.size() || s_[p_] != '}') fail("a '{' repetition is not closed; add '}'");
          ++p_;
          if (hi >= 0 && hi < lo) fail("{m,n} with n < m");
        }
        Seq item(seq.begin() + (ptrdiff_t)last, seq.end());
        seq.resize(last);
        Symbol r;
        r.kind = Symbol::kRef;
        r.a = repeat(item, lo, hi);
        seq.push_back(r);
        count(1);
      } else if (c == '<') {
        fail("token references (<...>) are not supported; spell the text as a literal");
      } else {
        break;
      }
      skip(nested);
    }
    return seq;
  }

  // A rule matching `item` lo to hi times (hi -1: unbounded), right-recursive as llama.cpp's.
  int32_t repeat(const Seq& item, int lo, int hi) {
    count(item.size() * (size_t)(lo + (hi < 0 ? 1 : hi - lo)) + 4);
    Seq body;
    for (int i = 0; i < lo; ++i) body.insert(body.end(), item.begin(), item.end());
    auto ref = [](int32_t r) { Symbol s; s.kind = Symbol::kRef; s.a = r; return s; };
    if (hi < 0) {
      // star ::= item star | (empty)
      const int32_t star = generated_rule({});
      Seq loop = item;
      loop.push_back(ref(star));
      rules_[(size_t)star] = {loop, Seq{}};
      body.push_back(ref(star));
    } else if (hi > lo) {
      // opt_k ::= item opt_{k-1} | (empty), nested hi - lo deep
      int32_t inner = -1;
      for (int k = 0; k < hi - lo; ++k) {
        Seq one = item;
        if (inner >= 0) one.push_back(ref(inner));
        inner = generated_rule({one, Seq{}});
      }
      body.push_back(ref(inner));
    }
    return generated_rule({body});
  }

  std::string_view s_;
  const GrammarLimits& lim_;
  size_t p_ = 0;
  std::vector<std::string> names_;
  std::unordered_map<std::string, int32_t> ids_;
  std::vector<std::vector<Seq>> rules_;
  std::vector<bool> defined_;
  std::vector<size_t> first_use_;
  std::vector<std::pair<uint32_t, uint32_t>> ranges_;
  size_t symbols_ = 0;
  int generated_ = 0;
};

}  // namespace

std::shared_ptr<const Grammar> Grammar::from_gbnf(std::string_view text, const GrammarLimits& limits, std::string_view root) {
  auto impl = std::make_shared<Impl>(Parser(text, limits).parse(root));
  detail::check_grammar(*impl);
  (void)detail::GrammarState::start(*impl);  // kValue now, not mid-generation, for a start state that explodes
  return std::make_shared<const Grammar>(std::move(impl));
}

size_t Grammar::rule_count() const { return impl_->alternatives.size(); }

}  // namespace spore::nlp
