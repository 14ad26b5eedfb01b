#include "nlp/template/pystr.h"

#include <algorithm>
#include <cstdio>

namespace spore::nlp::tmpl::pystr {

std::uint32_t next_cp(std::string_view s, std::size_t& i) {
  auto b0 = static_cast<unsigned char>(s[i]);
  int len = b0 < 0x80 ? 1 : (b0 >> 5) == 6 ? 2 : (b0 >> 4) == 14 ? 3 : (b0 >> 3) == 30 ? 4 : 0;
  if (len <= 1 || i + len > s.size()) {
    ++i;
    return b0;
  }
  std::uint32_t cp = b0 & (0x7f >> len);
  for (int k = 1; k < len; ++k) {
    auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xc0) != 0x80) {
      ++i;
      return b0;
    }
    cp = (cp << 6) | (b & 0x3f);
  }
  i += len;
  return cp;
}

void append_cp(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

std::vector<std::uint32_t> code_points(std::string_view s) {
  std::vector<std::uint32_t> out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) out.push_back(next_cp(s, i));
  return out;
}

std::vector<std::size_t> cp_offsets(std::string_view s) {
  std::vector<std::size_t> out;
  out.reserve(s.size() + 1);
  for (std::size_t i = 0; i < s.size();) {
    out.push_back(i);
    next_cp(s, i);
  }
  out.push_back(s.size());
  return out;
}

std::size_t length(std::string_view s) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size();) {
    next_cp(s, i);
    ++n;
  }
  return n;
}

bool is_space(std::uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x20) || cp == 0x85 || cp == 0xa0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202f || cp == 0x205f || cp == 0x3000;
}

std::string strip(std::string_view s, const std::optional<std::string>& chars, Side side) {
  std::vector<std::uint32_t> set;
  if (chars) set = code_points(*chars);
  auto stripped = [&](std::uint32_t cp) {
    return chars ? std::find(set.begin(), set.end(), cp) != set.end() : is_space(cp);
  };
  std::vector<std::size_t> off = cp_offsets(s);
  std::size_t lo = 0, hi = off.size() - 1;  // code point indices [lo, hi)
  if (side != Side::kRight) {
    while (lo < hi) {
      std::size_t i = off[lo];
      if (!stripped(next_cp(s, i))) break;
      ++lo;
    }
  }
  if (side != Side::kLeft) {
    while (hi > lo) {
      std::size_t i = off[hi - 1];
      if (!stripped(next_cp(s, i))) break;
      --hi;
    }
  }
  return std::string(s.substr(off[lo], off[hi] - off[lo]));
}

std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep,
                               long maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    std::size_t pos = 0;
    while (maxsplit < 0 || static_cast<long>(out.size()) < maxsplit) {
      std::size_t hit = s.find(*sep, pos);
      if (hit == std::string_view::npos) break;
      out.emplace_back(s.substr(pos, hit - pos));
      pos = hit + sep->size();
    }
    out.emplace_back(s.substr(pos));
    return out;
  }
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t j = i;
    while (j < s.size()) {  // skip whitespace
      std::size_t k = j;
      if (!is_space(next_cp(s, k))) break;
      j = k;
    }
    if (j >= s.size()) break;
    if (maxsplit >= 0 && static_cast<long>(out.size()) >= maxsplit) {
      // Python keeps the rest (trailing whitespace stripped) as the last item.
      out.push_back(strip(s.substr(j), std::nullopt, Side::kRight));
      return out;
    }
    std::size_t start = j;
    while (j < s.size()) {
      std::size_t k = j;
      if (is_space(next_cp(s, k))) break;
      j = k;
    }
    out.emplace_back(s.substr(start, j - start));
    i = j;
  }
  return out;
}

std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep,
                                long maxsplit) {
  if (maxsplit < 0) return split(s, sep, maxsplit);
  std::vector<std::string> out;
  if (sep) {
    std::size_t end = s.size();
    while (static_cast<long>(out.size()) < maxsplit) {
      if (end < sep->size()) break;
      std::size_t hit = s.rfind(*sep, end - sep->size());
      if (hit == std::string_view::npos) break;
      out.emplace_back(s.substr(hit + sep->size(), end - hit - sep->size()));
      end = hit;
    }
    out.emplace_back(s.substr(0, end));
    std::reverse(out.begin(), out.end());
    return out;
  }
  // Whitespace rsplit with a limit: split everything, then join the leading items back.
  std::string trimmed = strip(s, std::nullopt, Side::kRight);
  std::vector<std::string> all = split(trimmed, std::nullopt, -1);
  if (static_cast<long>(all.size()) <= maxsplit + 1) return all;
  std::size_t keep = all.size() - static_cast<std::size_t>(maxsplit);
  // The head is the original text up to the end of word `keep - 1`.
  std::size_t pos = 0;
  for (std::size_t w = 0; w < keep; ++w) {
    pos = trimmed.find(all[w], pos) + all[w].size();
  }
  std::string head = strip(std::string_view(trimmed).substr(0, pos), std::nullopt, Side::kLeft);
  out.push_back(head);
  out.insert(out.end(), all.begin() + static_cast<long>(keep), all.end());
  return out;
}

std::vector<std::string> splitlines(std::string_view s) {
  std::vector<std::string> out;
  std::size_t start = 0, i = 0;
  while (i < s.size()) {
    std::size_t at = i;
    std::uint32_t cp = next_cp(s, i);
    bool brk = cp == '\n' || cp == '\r' || cp == 0x0b || cp == 0x0c || (cp >= 0x1c && cp <= 0x1e) ||
               cp == 0x85 || cp == 0x2028 || cp == 0x2029;
    if (!brk) continue;
    out.emplace_back(s.substr(start, at - start));
    if (cp == '\r' && i < s.size() && s[i] == '\n') ++i;
    start = i;
  }
  if (start < s.size()) out.emplace_back(s.substr(start));
  return out;
}

std::string replace(std::string_view s, std::string_view old, std::string_view repl, long count) {
  std::string out;
  if (old.empty()) {  // Python inserts repl between code points (and at both ends)
    long n = 0;
    std::size_t i = 0;
    while (true) {
      if (count >= 0 && n >= count) {
        out.append(s.substr(i));
        break;
      }
      out.append(repl);
      ++n;
      if (i >= s.size()) break;
      std::size_t j = i;
      next_cp(s, j);
      out.append(s.substr(i, j - i));
      i = j;
    }
    return out;
  }
  std::size_t pos = 0;
  long n = 0;
  while (count < 0 || n < count) {
    std::size_t hit = s.find(old, pos);
    if (hit == std::string_view::npos) break;
    out.append(s.substr(pos, hit - pos));
    out.append(repl);
    pos = hit + old.size();
    ++n;
  }
  out.append(s.substr(pos));
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return out;
}

static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static char up(char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c; }
static char down(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

std::string title(std::string_view s) {
  std::string out(s);
  bool prev_cased = false;
  for (char& c : out) {
    bool letter = is_alpha(c) || (static_cast<unsigned char>(c) >= 0x80);
    if (is_alpha(c)) c = prev_cased ? down(c) : up(c);
    prev_cased = letter;
  }
  return out;
}

std::string capitalize(std::string_view s) {
  std::string out = lower(s);
  if (!out.empty()) out[0] = up(out[0]);
  return out;
}

std::string jinja_title(std::string_view s) {
  // jinja2: "".join(w[0].upper() + w[1:].lower() for w in re.split(r"([-\s({\[<]+)", s) if w)
  std::string out;
  bool at_word_start = true;
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t at = i;
    std::uint32_t cp = next_cp(s, i);
    bool sep = cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || is_space(cp);
    std::string_view piece = s.substr(at, i - at);
    if (sep) {
      out.append(piece);
      at_word_start = true;
    } else if (at_word_start) {
      out += piece.size() == 1 ? std::string(1, up(piece[0])) : std::string(piece);
      at_word_start = false;
    } else {
      out += piece.size() == 1 ? std::string(1, down(piece[0])) : std::string(piece);
    }
  }
  return out;
}

long find(std::string_view s, std::string_view sub, bool from_right) {
  std::size_t hit = from_right ? s.rfind(sub) : s.find(sub);
  if (hit == std::string_view::npos) return -1;
  return static_cast<long>(length(s.substr(0, hit)));
}

long count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return static_cast<long>(length(s)) + 1;
  long n = 0;
  for (std::size_t pos = s.find(sub); pos != std::string_view::npos; pos = s.find(sub, pos + sub.size()))
    ++n;
  return n;
}

std::vector<long> slice_indices(long n, std::optional<long> start, std::optional<long> stop,
                                long step) {
  // CPython's PySlice_AdjustIndices.
  long lo, hi;
  if (step > 0) {
    lo = start ? *start : 0;
    hi = stop ? *stop : n;
    if (lo < 0) lo = std::max(0L, lo + n);
    if (lo > n) lo = n;
    if (hi < 0) hi = std::max(0L, hi + n);
    if (hi > n) hi = n;
  } else {
    lo = start ? *start : n - 1;
    hi = stop ? *stop : -1 - n;  // "before the first item"
    if (lo < 0) lo = std::max(-1L, lo + n);
    if (lo >= n) lo = n - 1;
    if (stop) {
      if (hi < 0) hi = std::max(-1L, hi + n);
      if (hi >= n) hi = n - 1;
    } else {
      hi = -1;
    }
  }
  std::vector<long> out;
  if (step > 0) {
    for (long i = lo; i < hi; i += step) out.push_back(i);
  } else {
    for (long i = lo; i > hi; i += step) out.push_back(i);
  }
  return out;
}

std::string repr(std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (std::size_t i = 0; i < s.size();) {
    std::size_t at = i;
    std::uint32_t cp = next_cp(s, i);
    char buf[16];
    if (cp == static_cast<std::uint32_t>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0xa0) || cp == 0xad) {
      std::snprintf(buf, sizeof buf, "\\x%02x", cp);
      out += buf;
    } else if (cp == 0x2028 || cp == 0x2029) {
      std::snprintf(buf, sizeof buf, "\\u%04x", cp);
      out += buf;
    } else {
      out.append(s.substr(at, i - at));
    }
  }
  out += quote;
  return out;
}

void append_json_string(std::string& out, std::string_view s, bool ensure_ascii) {
  out += '"';
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (ensure_ascii && static_cast<unsigned char>(c) >= 0x80) {
      std::uint32_t cp = next_cp(s, i);
      --i;
      char buf[16];
      if (cp >= 0x10000) {
        cp -= 0x10000;
        std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xd800 + (cp >> 10), 0xdc00 + (cp & 0x3ff));
      } else {
        std::snprintf(buf, sizeof buf, "\\u%04x", cp);
      }
      out += buf;
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

}  // namespace spore::nlp::tmpl::pystr
