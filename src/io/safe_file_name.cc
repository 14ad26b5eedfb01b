// Safe single path components for names that come from data (NOTE [Safe file names]).
#include "spore/safe_file_name.h"

#include <array>
#include <set>

#include "spore/format.h"

namespace spore {

namespace {

// Length of the UTF-8 sequence starting at s[i] when it is a valid, shortest-form encoding of a
// scalar value (no surrogates, at most U+10FFFF); 0 otherwise.
size_t utf8_length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return (unsigned char)s[i + k]; };
  const auto cont = [&](size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;   // overlong
    if (c == 0xED && b(1) >= 0xA0) return 0;  // a UTF-16 surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;   // overlong
    if (c == 0xF4 && b(1) >= 0x90) return 0;  // past U+10FFFF
    return 4;
  }
  return 0;
}

bool forbidden_ascii(unsigned char c) {
  if (c < 0x20 || c == 0x7F) return true;  // NUL and the other control characters
  switch (c) {
    case '/': case '\\':  // path separators (POSIX, Windows)
    case '<': case '>': case ':': case '"': case '|': case '?': case '*':  // Windows forbids these
      return true;
    default:
      return false;
  }
}

char ascii_upper(char c) { return c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c; }

// CON, PRN, AUX, NUL, COM0-9 and LPT0-9 name devices on Windows whatever follows the first dot.
bool windows_device_name(std::string_view name) {
  std::string stem(name.substr(0, name.find('.')));
  while (!stem.empty() && stem.back() == ' ') stem.pop_back();
  for (char& c : stem) c = ascii_upper(c);
  static const std::array<const char*, 4> plain = {"CON", "PRN", "AUX", "NUL"};
  for (const char* p : plain)
    if (stem == p) return true;
  return stem.size() == 4 && (stem.rfind("COM", 0) == 0 || stem.rfind("LPT", 0) == 0) && stem[3] >= '0' &&
         stem[3] <= '9';
}

// Characters mapped, invalid UTF-8 replaced; the length and the edges are handled after.
std::string map_characters(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (size_t i = 0; i < name.size();) {
    const size_t n = utf8_length(name, i);
    if (n == 0) {  // not UTF-8: one byte at a time
      out += '_';
      ++i;
      continue;
    }
    if (n == 1) {
      out += forbidden_ascii((unsigned char)name[i]) ? '_' : name[i];
    } else if (n == 2 && (unsigned char)name[i] == 0xC2 && (unsigned char)name[i + 1] < 0xA0) {
      out += '_';  // a C1 control character (U+0080-U+009F)
    } else {
      out.append(name.substr(i, n));
    }
    i += n;
  }
  return out;
}

// The longest prefix of `s` of at most `bytes` bytes that ends on a UTF-8 boundary (s is valid
// UTF-8 here).
std::string_view utf8_prefix(std::string_view s, size_t bytes) {
  if (s.size() <= bytes) return s;
  size_t end = bytes;
  while (end > 0 && ((unsigned char)s[end] & 0xC0) == 0x80) --end;
  return s.substr(0, end);
}

std::string lower_ascii(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
  return s;
}

}  // namespace

std::string safe_file_name(std::string_view name, std::string_view fallback) {
  if (name.empty()) return fallback.empty() ? std::string("_") : safe_file_name(fallback, "_");
  std::string out = map_characters(name);
  for (char& c : out) {  // leading dots: no ".", "..", or hidden file
    if (c != '.') break;
    c = '_';
  }
  if (out.back() == '.' || out.back() == ' ') out.back() = '_';
  if (windows_device_name(out)) out.insert(out.begin(), '_');
  if (out.size() > kMaxSafeFileNameBytes) {
    // The hash is of the original bytes, so names that differ only after the cut stay distinct.
    // append, not "x" + a temporary: GCC 12 warns falsely there (-Wrestrict, GCC bug 105329).
    const std::string tail = std::string(1, '~').append(sha256_bytes(name), 0, 16);
    std::string head(utf8_prefix(out, kMaxSafeFileNameBytes - tail.size()));
    if (!head.empty() && (head.back() == '.' || head.back() == ' ')) head.back() = '_';
    out = head + tail;
  }
  return out;
}

bool is_safe_file_name(std::string_view name) { return !name.empty() && safe_file_name(name) == name; }

std::vector<std::string> unique_safe_file_names(const std::vector<std::string>& names,
                                                std::string_view unnamed_prefix) {
  std::vector<std::string> out(names.size());
  std::set<std::string> taken;  // lower-cased
  // Names already safe first, so that a model's ordinary names are never the ones renamed.
  std::vector<size_t> later;
  for (size_t i = 0; i < names.size(); ++i) {
    if (is_safe_file_name(names[i]) && taken.insert(lower_ascii(names[i])).second)
      out[i] = names[i];
    else
      later.push_back(i);
  }
  for (size_t i : later) {
    const std::string base =
        names[i].empty() && !unnamed_prefix.empty()
            ? safe_file_name(std::string(unnamed_prefix) + std::to_string(i))
            : safe_file_name(names[i]);
    std::string candidate = base;
    for (int k = 2; !taken.insert(lower_ascii(candidate)).second; ++k) candidate = base + "~" + std::to_string(k);
    out[i] = candidate;
  }
  return out;
}

}  // namespace spore
