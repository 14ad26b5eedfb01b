#include "nlp/template/lexer.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "nlp/template/errors.h"
#include "nlp/template/pystr.h"

namespace spore::nlp::tmpl {
namespace {

bool all_space(std::string_view s) {
  if (s.empty()) return false;
  for (std::size_t i = 0; i < s.size();)
    if (!pystr::is_space(pystr::next_cp(s, i))) return false;
  return true;
}

std::size_t skip_space(std::string_view s, std::size_t i) {
  while (i < s.size()) {
    std::size_t j = i;
    if (!pystr::is_space(pystr::next_cp(s, j))) break;
    i = j;
  }
  return i;
}

class Lexer {
 public:
  explicit Lexer(std::string src) : src_(std::move(src)) {
    line_starts_.push_back(0);
    for (std::size_t i = 0; i < src_.size(); ++i)
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
  }

  std::vector<Token> run() {
    std::size_t pos = 0;
    std::string_view s = src_;
    while (pos < s.size()) {
      std::size_t tag = find_tag(pos);
      if (tag == std::string_view::npos) {
        emit_data(std::string(s.substr(pos)), pos);
        break;
      }
      char kind = s[tag + 1];
      std::size_t after = tag + 2;
      char sign = (after < s.size() && (s[after] == '-' || s[after] == '+')) ? s[after] : 0;
      if (sign) ++after;
      std::string text(s.substr(pos, tag - pos));
      bool line_starting = pos == 0 || s[pos - 1] == '\n';
      if (sign == '-') {
        text = pystr::strip(text, std::nullopt, pystr::Side::kRight);
      } else if (sign != '+' && kind != '{') {
        std::size_t l_pos = text.rfind('\n');
        l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
        if ((l_pos > 0 || line_starting) && all_space(std::string_view(text).substr(l_pos)))
          text.resize(l_pos);
      }
      emit_data(std::move(text), pos);
      if (kind == '#') {
        pos = lex_comment(after, tag);
      } else if (kind == '%' && is_raw(after)) {
        pos = lex_raw(after, tag);
      } else {
        pos = lex_tag(kind == '{', after, tag);
      }
    }
    Token eof{Tok::kEof, "", 0, 0};
    set_pos(eof, s.size());
    out_.push_back(eof);
    return std::move(out_);
  }

 private:
  std::size_t find_tag(std::size_t from) const {
    for (std::size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#'))
        return i;
    }
    return std::string::npos;
  }

  // Line by binary search; column (in code points) counted on from the previous token when it
  // is on the same line, so a template on one long line still lexes in linear time.
  void set_pos(Token& t, std::size_t offset) {
    std::size_t lo = 0, hi = line_starts_.size();
    while (hi - lo > 1) {
      std::size_t mid = (lo + hi) / 2;
      (line_starts_[mid] <= offset ? lo : hi) = mid;
    }
    t.line = static_cast<int>(lo + 1);
    std::size_t from = line_starts_[lo];
    std::size_t col = 1;
    if (cached_line_ == lo && cached_offset_ >= from && cached_offset_ <= offset) {
      from = cached_offset_;
      col = cached_col_;
    }
    col += pystr::length(std::string_view(src_).substr(from, offset - from));
    cached_line_ = lo;
    cached_offset_ = offset;
    cached_col_ = col;
    t.col = static_cast<int>(col);
  }

  void emit_data(std::string text, std::size_t offset) {
    if (text.empty()) return;
    Token t{Tok::kData, std::move(text)};
    set_pos(t, offset);
    out_.push_back(std::move(t));
  }

  void emit(Tok kind, std::string text, std::size_t offset) {
    Token t{kind, std::move(text)};
    set_pos(t, offset);
    out_.push_back(std::move(t));
  }

  // After a block or comment end: -X} eats all whitespace, +X} nothing, X} one newline.
  std::size_t after_end(std::size_t end, char sign) const {
    if (sign == '-') return skip_space(src_, end);
    if (sign == '+') return end;
    return (end < src_.size() && src_[end] == '\n') ? end + 1 : end;
  }

  std::size_t lex_comment(std::size_t from, std::size_t tag) {
    std::size_t end = src_.find("#}", from);
    if (end == std::string::npos) {
      Token t{};
      set_pos(t, tag);
      syntax_error(t.line, t.col, "comment '{#' is never closed with '#}'");
    }
    char sign = (end > from && (src_[end - 1] == '-' || src_[end - 1] == '+')) ? src_[end - 1] : 0;
    return after_end(end + 2, sign);
  }

  bool is_raw(std::size_t from) const {
    std::size_t i = skip_space(src_, from);
    if (src_.compare(i, 3, "raw") != 0) return false;
    i = skip_space(src_, i + 3);
    if (i < src_.size() && src_[i] == '-') ++i;
    return src_.compare(i, 2, "%}") == 0;
  }

  // {% raw %}...{% endraw %}: the text between is data, untouched.
  std::size_t lex_raw(std::size_t from, std::size_t tag) {
    std::size_t i = skip_space(src_, from) + 3;
    i = skip_space(src_, i);
    char open_sign = src_[i] == '-' ? '-' : 0;
    i += open_sign ? 3 : 2;
    std::size_t body = open_sign ? skip_space(src_, i) : i;
    for (std::size_t e = src_.find("{%", body); e != std::string::npos; e = src_.find("{%", e + 1)) {
      std::size_t j = e + 2;
      char sign = (j < src_.size() && (src_[j] == '-' || src_[j] == '+')) ? src_[j] : 0;
      if (sign) ++j;
      j = skip_space(src_, j);
      if (src_.compare(j, 6, "endraw") != 0) continue;
      j = skip_space(src_, j + 6);
      char end_sign = (j < src_.size() && (src_[j] == '-' || src_[j] == '+')) ? src_[j] : 0;
      if (end_sign) ++j;
      if (src_.compare(j, 2, "%}") != 0) continue;
      std::string text = src_.substr(body, e - body);
      if (sign == '-') {
        text = pystr::strip(text, std::nullopt, pystr::Side::kRight);
      } else if (sign != '+') {
        std::size_t l_pos = text.rfind('\n');
        l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
        if (l_pos > 0 && all_space(std::string_view(text).substr(l_pos))) text.resize(l_pos);
      }
      emit_data(std::move(text), body);
      return after_end(j + 2, end_sign);
    }
    Token t{};
    set_pos(t, tag);
    syntax_error(t.line, t.col, "'{% raw %}' is never closed with '{% endraw %}'");
  }

  std::size_t lex_tag(bool variable, std::size_t pos, std::size_t tag) {
    emit(variable ? Tok::kVarBegin : Tok::kBlockBegin, "", tag);
    std::string balance;  // closing brackets expected, innermost last
    std::string_view s = src_;
    while (true) {
      pos = skip_space(s, pos);
      if (pos >= s.size()) {
        Token t{};
        set_pos(t, tag);
        syntax_error(t.line, t.col, std::string("tag '") + (variable ? "{{" : "{%") +
                                        "' is never closed with '" + (variable ? "}}" : "%}") + "'");
      }
      if (balance.empty()) {
        const char* close = variable ? "}}" : "%}";
        for (char sign : {'-', '+', '\0'}) {
          if (sign == '+' && variable) continue;
          std::size_t at = pos + (sign ? 1 : 0);
          if (sign && s[pos] != sign) continue;
          if (s.compare(at, 2, close) == 0) {
            emit(variable ? Tok::kVarEnd : Tok::kBlockEnd, "", pos);
            if (variable) return sign == '-' ? skip_space(s, at + 2) : at + 2;
            return after_end(at + 2, sign);
          }
        }
      }
      char c = s[pos];
      if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') {
        std::size_t e = pos + 1;
        while (e < s.size() && (std::isalnum(static_cast<unsigned char>(s[e])) || s[e] == '_')) ++e;
        emit(Tok::kName, std::string(s.substr(pos, e - pos)), pos);
        pos = e;
      } else if (c >= '0' && c <= '9') {
        pos = lex_number(pos);
      } else if (c == '\'' || c == '"') {
        pos = lex_string(pos);
      } else {
        static const char* ops2[] = {"//", "**", "==", "!=", ">=", "<="};
        std::string op;
        for (const char* o : ops2)
          if (s.compare(pos, 2, o) == 0) op = o;
        if (op.empty()) {
          if (!std::strchr("+-/*%~[](){}<>=.:|,;", c)) {
            Token t{};
            set_pos(t, pos);
            syntax_error(t.line, t.col, std::string("unexpected character '") + c + "'");
          }
          op = std::string(1, c);
        }
        if (op == "(" || op == "[" || op == "{") {
          balance += op == "(" ? ')' : op == "[" ? ']' : '}';
        } else if (op == ")" || op == "]" || op == "}") {
          if (balance.empty() || balance.back() != op[0]) {
            Token t{};
            set_pos(t, pos);
            syntax_error(t.line, t.col, "unexpected '" + op + "'" +
                                            (balance.empty() ? "" : std::string(", expected '") + balance.back() + "'"));
          }
          balance.pop_back();
        }
        emit(Tok::kOp, op, pos);
        pos += op.size();
      }
    }
  }

  std::size_t lex_number(std::size_t pos) {
    std::string_view s = src_;
    auto digits = [&](std::size_t i) {  // \d+(_\d+)*
      while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) ||
                              (s[i] == '_' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))))
        ++i;
      return i;
    };
    std::size_t e = digits(pos);
    bool is_float = false;
    bool after_dot = pos > 0 && s[pos - 1] == '.';  // "x.0.1" is attribute 0, then 1
    if (!after_dot && e + 1 < s.size() && s[e] == '.' && std::isdigit(static_cast<unsigned char>(s[e + 1]))) {
      e = digits(e + 1);
      is_float = true;
    }
    if (!after_dot && e < s.size() && (s[e] == 'e' || s[e] == 'E')) {
      std::size_t x = e + 1;
      if (x < s.size() && (s[x] == '+' || s[x] == '-')) ++x;
      if (x < s.size() && std::isdigit(static_cast<unsigned char>(s[x]))) {
        e = digits(x);
        is_float = true;
      }
    }
    std::string text;
    for (std::size_t i = pos; i < e; ++i)
      if (s[i] != '_') text += s[i];
    Token t{is_float ? Tok::kFloat : Tok::kInt, text};
    set_pos(t, pos);
    if (is_float) {
      t.float_value = std::strtod(text.c_str(), nullptr);
    } else {
      errno = 0;
      t.int_value = std::strtoll(text.c_str(), nullptr, 10);
      if (errno == ERANGE) unsupported(t.line, "the integer literal " + text + " (beyond 64 bits)");
    }
    out_.push_back(std::move(t));
    return e;
  }

  std::size_t lex_string(std::size_t pos) {
    std::string_view s = src_;
    char q = s[pos];
    std::string value;
    std::size_t i = pos + 1;
    Token t{Tok::kString, ""};
    set_pos(t, pos);
    auto hex = [&](std::size_t at, int n) -> long {
      if (at + static_cast<std::size_t>(n) > s.size()) return -1;
      long v = 0;
      for (int k = 0; k < n; ++k) {
        char h = s[at + static_cast<std::size_t>(k)];
        int d = std::isdigit(static_cast<unsigned char>(h)) ? h - '0'
                : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
      }
      return v;
    };
    while (true) {
      if (i >= s.size()) syntax_error(t.line, t.col, "string literal is never closed");
      char c = s[i];
      if (c == q) break;
      if (c != '\\') {
        value += c;
        ++i;
        continue;
      }
      if (i + 1 >= s.size()) syntax_error(t.line, t.col, "string literal is never closed");
      char e = s[i + 1];
      i += 2;
      switch (e) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case 'a': value += '\a'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'v': value += '\v'; break;
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        case '\n': break;  // line continuation
        case 'x': case 'u': case 'U': {
          int n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          long cp = hex(i, n);
          if (cp < 0 || cp > 0x10ffff)
            syntax_error(t.line, t.col, std::string("bad \\") + e + " escape in string literal");
          pystr::append_cp(value, static_cast<std::uint32_t>(cp));
          i += static_cast<std::size_t>(n);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            unsigned cp = static_cast<unsigned>(e - '0');
            for (int k = 0; k < 2 && i < s.size() && s[i] >= '0' && s[i] <= '7'; ++k, ++i)
              cp = cp * 8 + static_cast<unsigned>(s[i] - '0');
            pystr::append_cp(value, cp);
          } else {  // unknown escapes stay as written
            value += '\\';
            value += e;
          }
      }
    }
    t.text = std::move(value);
    out_.push_back(std::move(t));
    return i + 1;
  }

  std::string src_;
  std::vector<std::size_t> line_starts_;
  std::vector<Token> out_;
  std::size_t cached_line_ = static_cast<std::size_t>(-1), cached_offset_ = 0, cached_col_ = 1;
};

std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (std::size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();  // keep_trailing_newline=False
  return out;
}

}  // namespace

std::vector<Token> lex(std::string_view source) { return Lexer(normalize_newlines(source)).run(); }

}  // namespace spore::nlp::tmpl
