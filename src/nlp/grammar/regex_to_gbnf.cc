// JSON Schema `pattern` -> GBNF (NOTE [Grammars]). The grammar generates strings the regex
// matches entirely (anchors ^ and $ are implied), which also satisfy JSON Schema's unanchored
// search. Characters are limited to those a JSON string holds without escaping (no '"', '\' or
// controls), so every generated string is also valid JSON text: a subset of the pattern's
// language, never a string outside it.
// Refused (kValue): lookaround, backreferences, \b, and an unbounded repetition of something that
// itself repeats without bound, e.g. (a+)+ — the shape that backtracks catastrophically in regex
// engines and multiplies a grammar matcher's parse stacks.
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "nlp/grammar/gbnf_text.h"
#include "spore/error.h"

namespace spore::nlp::detail {

namespace {

// Ranges a JSON string may hold unescaped; a class is intersected with these.
const std::vector<std::pair<uint32_t, uint32_t>> kSafe = {{0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0x7E}, {0xA0, 0x10FFFF}};

class RegexParser {
 public:
  RegexParser(std::string_view re, int max_count) : s_(re), max_count_(max_count) {}

  std::string parse() {
    if (!s_.empty() && s_[0] == '^') ++p_;
    bool unbounded = false, nullable = false;
    std::string out = alternation(0, unbounded, nullable);
    if (p_ < s_.size()) fail("unexpected ')'");
    return out.empty() ? "\"\"" : out;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(ErrorCode::kValue, "pattern '" + std::string(s_.substr(0, 200)) + "': at offset " + std::to_string(p_) +
                                       ": " + what);
  }

  // `unbounded`: some part repeats without bound; `nullable`: the whole can match the empty string.
  std::string alternation(int depth, bool& unbounded, bool& nullable) {
    if (depth > 50) fail("groups nest deeper than 50");
    std::vector<std::string> alts;
    nullable = false;
    bool alt_nullable = false;
    alts.push_back(sequence(depth, unbounded, alt_nullable));
    nullable = nullable || alt_nullable;
    while (p_ < s_.size() && s_[p_] == '|') {
      ++p_;
      alts.push_back(sequence(depth, unbounded, alt_nullable));
      nullable = nullable || alt_nullable;
    }
    if (alts.size() == 1) return alts[0];
    std::string out = "(";
    for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + (alts[i].empty() ? std::string("\"\"") : alts[i]);
    return out + ")";
  }

  uint32_t utf8() {
    const unsigned char c = (unsigned char)s_[p_];
    const int n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 0 || p_ + (size_t)n > s_.size()) fail("invalid UTF-8");
    uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k < n; ++k) cp = (cp << 6) | ((unsigned char)s_[p_ + (size_t)k] & 0x3F);
    p_ += (size_t)n;
    return cp;
  }

  static std::vector<std::pair<uint32_t, uint32_t>> negate(std::vector<std::pair<uint32_t, uint32_t>> rs) {
    std::sort(rs.begin(), rs.end());
    std::vector<std::pair<uint32_t, uint32_t>> out;
    for (const auto& [lo, hi] : kSafe) {
      uint64_t at = lo;  // the first code point not yet covered or emitted
      for (const auto& [a, b] : rs) {
        if (b < at || a > hi) continue;
        if (a > at) out.emplace_back((uint32_t)at, a - 1);
        at = std::max<uint64_t>(at, (uint64_t)b + 1);
      }
      if (at <= hi) out.emplace_back((uint32_t)at, hi);
    }
    return out;
  }

  // A class escape (\d \w \s and their negations) or nullopt.
  bool class_escape(char e, std::vector<std::pair<uint32_t, uint32_t>>& rs) {
    switch (e) {
      case 'd': rs.insert(rs.end(), {{'0', '9'}}); return true;
      case 'w': rs.insert(rs.end(), {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}); return true;
      case 's': rs.insert(rs.end(), {{' ', ' '}}); return true;  // the unescaped whitespace JSON allows
      case 'D': { auto n = negate({{'0', '9'}}); rs.insert(rs.end(), n.begin(), n.end()); return true; }
      case 'W': { auto n = negate({{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}); rs.insert(rs.end(), n.begin(), n.end()); return true; }
      case 'S': { auto n = negate({{0, 0x20}}); rs.insert(rs.end(), n.begin(), n.end()); return true; }
      default: return false;
    }
  }

  uint32_t escaped_char(char e) {
    switch (e) {
      case 'n': case 'r': case 't': case 'f': case 'v': case '0':
        fail("\\" + std::string(1, e) + " matches a control character, which JSON strings hold only escaped; not supported");
      case 'b': case 'B': fail("word boundaries (\\b, \\B) are not supported");
      case 'x': {
        if (p_ + 2 > s_.size()) fail("\\x needs two hex digits");
        for (size_t k = 0; k < 2; ++k)
          if (!std::isxdigit((unsigned char)s_[p_ + k])) fail("\\x needs two hex digits");
        const uint32_t v = (uint32_t)std::stoul(std::string(s_.substr(p_, 2)), nullptr, 16);
        p_ += 2;
        return v;
      }
      case 'u': {
        if (p_ + 4 > s_.size()) fail("\\u needs four hex digits");
        for (size_t k = 0; k < 4; ++k)
          if (!std::isxdigit((unsigned char)s_[p_ + k])) fail("\\u needs four hex digits");
        const uint32_t v = (uint32_t)std::stoul(std::string(s_.substr(p_, 4)), nullptr, 16);
        p_ += 4;
        return v;
      }
      default:
        if (e >= '1' && e <= '9') fail("backreferences are not supported");
        if (std::isalnum((unsigned char)e)) fail("the escape \\" + std::string(1, e) + " is not supported");
        return (uint32_t)(unsigned char)e;
    }
  }

  // Intersects ranges with kSafe and writes a GBNF class; an empty intersection matches nothing.
  std::string klass(const std::vector<std::pair<uint32_t, uint32_t>>& rs) {
    std::string out = "[";
    bool any = false;
    for (const auto& [a, b] : rs)
      for (const auto& [lo, hi] : kSafe) {
        const uint32_t x = std::max(a, lo), y = std::min(b, hi);
        if (x > y) continue;
        out += gbnf_escape(x);
        if (y > x) out.append(1, '-').append(gbnf_escape(y));
        any = true;
      }
    if (!any) fail("a character class holds only characters a JSON string needs escaped; not supported");
    return out + "]";
  }

  std::string sequence(int depth, bool& unbounded_any, bool& nullable) {
    std::string out;
    nullable = true;
    while (p_ < s_.size() && s_[p_] != '|' && s_[p_] != ')') {
      std::string atom;
      bool atom_unbounded = false, atom_nullable = false;
      const char c = s_[p_];
      if (c == '$' && p_ + 1 == s_.size()) {
        ++p_;
        continue;
      }
      if (c == '(') {
        ++p_;
        if (p_ < s_.size() && s_[p_] == '?') {
          if (p_ + 1 < s_.size() && s_[p_ + 1] == ':') p_ += 2;
          else fail("lookaround and named groups are not supported; use (...) or (?:...)");
        }
        atom = "(" + alternation(depth + 1, atom_unbounded, atom_nullable) + ")";
        if (atom == "()") atom = "\"\"";
        if (p_ >= s_.size() || s_[p_] != ')') fail("a '(' is not closed");
        ++p_;
      } else if (c == '[') {
        ++p_;
        bool neg = false;
        if (p_ < s_.size() && s_[p_] == '^') neg = true, ++p_;
        std::vector<std::pair<uint32_t, uint32_t>> rs;
        bool first = true;
        while (p_ < s_.size() && (s_[p_] != ']' || first)) {
          first = false;
          uint32_t lo;
          if (s_[p_] == '\\') {
            if (++p_ >= s_.size()) fail("the pattern ends after a backslash");
            const char e = s_[p_++];
            if (class_escape(e, rs)) continue;
            lo = escaped_char(e);
          } else {
            lo = utf8();
          }
          uint32_t hi = lo;
          if (p_ + 1 < s_.size() && s_[p_] == '-' && s_[p_ + 1] != ']') {
            ++p_;
            if (s_[p_] == '\\') {
              if (++p_ >= s_.size()) fail("the pattern ends after a backslash");
              hi = escaped_char(s_[p_++]);
            } else {
              hi = utf8();
            }
            if (hi < lo) fail("a class range runs backwards");
          }
          rs.emplace_back(lo, hi);
        }
        if (p_ >= s_.size()) fail("a '[' is not closed");
        ++p_;
        atom = klass(neg ? negate(rs) : rs);
      } else if (c == '.') {
        ++p_;
        atom = klass(kSafe);
      } else if (c == '\\') {
        if (++p_ >= s_.size()) fail("the pattern ends after a backslash");
        const char e = s_[p_++];
        std::vector<std::pair<uint32_t, uint32_t>> rs;
        if (class_escape(e, rs)) atom = klass(rs);
        else {
          const uint32_t cp = escaped_char(e);
          atom = klass({{cp, cp}});
        }
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        fail(std::string("'") + c + "' follows nothing it could repeat");
      } else if (c == '^') {
        fail("'^' is only supported at the start");
      } else if (c == '$') {
        fail("'$' is only supported at the end");
      } else {
        const uint32_t cp = utf8();
        atom = klass({{cp, cp}});
      }
      // Quantifier.
      if (p_ < s_.size() && (s_[p_] == '*' || s_[p_] == '+' || s_[p_] == '?' || s_[p_] == '{')) {
        const char q = s_[p_++];
        std::string suffix(1, q);
        bool unbounded = q == '*' || q == '+';
        if (q == '{') {
          const size_t close = s_.find('}', p_);
          if (close == std::string_view::npos) fail("a '{' is not closed");
          const std::string body(s_.substr(p_, close - p_));
          p_ = close + 1;
          long lo = 0, hi = -1;
          const size_t comma = body.find(',');
          auto num = [&](const std::string& t) {
            if (t.empty() || t.size() > 6 || t.find_first_not_of("0123456789") != std::string::npos)
              fail("'{" + body + "}' is not a repetition count");
            return std::stol(t);
          };
          if (comma == std::string::npos) {
            lo = hi = num(body);
          } else {
            lo = num(body.substr(0, comma));
            if (comma + 1 < body.size()) hi = num(body.substr(comma + 1));
          }
          if (lo > max_count_ || hi > max_count_)
            fail("a repetition count is above " + std::to_string(max_count_));
          if (hi >= 0 && hi < lo) fail("{m,n} with n < m");
          unbounded = hi < 0;
          suffix = "{" + std::to_string(lo) + "," + (hi >= 0 ? std::to_string(hi) : std::string()) + "}";
        }
        if (p_ < s_.size() && (s_[p_] == '?' || s_[p_] == '+')) ++p_;  // lazy or possessive: same language
        // An empty group repeated any number of times is still empty: the quantifier is dropped
        // (GBNF has nothing to attach it to).
        const bool empty_group = atom == "\"\"";
        if (empty_group) suffix.clear(), unbounded = false;
        if (unbounded && atom_unbounded)
          fail("an unbounded repetition of something that already repeats without bound (like (a+)+) is refused: it "
               "backtracks catastrophically; write it with one repetition");
        // A grammar cannot repeat an empty match without bound (the rule would recurse on itself
        // before reading anything); the regex means the same without the empty alternative.
        if (unbounded && atom_nullable)
          fail("an unbounded repetition of something that can match the empty string (like (a|)+ or (a?)*) is "
               "refused; drop the empty alternative or make the repeated part match at least one character");
        atom += suffix;
        atom_unbounded = atom_unbounded || unbounded;
        atom_nullable = atom_nullable || q == '*' || q == '?' || suffix.rfind("{0,", 0) == 0;
      }
      unbounded_any = unbounded_any || atom_unbounded;
      nullable = nullable && atom_nullable;
      out += (out.empty() ? "" : " ") + atom;
    }
    return out;
  }

  std::string_view s_;
  int max_count_;
  size_t p_ = 0;
};

}  // namespace

std::string regex_to_gbnf(std::string_view pattern, int max_count) {
  if (pattern.size() > 4096) throw Error(ErrorCode::kValue, "pattern: longer than 4096 bytes; shorten it");
  return RegexParser(pattern, max_count).parse();
}

}  // namespace spore::nlp::detail
