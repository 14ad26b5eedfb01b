// Python str operations on UTF-8 text, by code point as Python counts them (len, slicing,
// strip with Python's whitespace set, split, title...). Case mapping is ASCII-only (see NOTE
// [Chat templates]: role names and keywords are what templates case-map).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spore::nlp::tmpl::pystr {

// Decodes one code point at s[i], advancing i; malformed bytes decode as themselves (one byte).
std::uint32_t next_cp(std::string_view s, std::size_t& i);
void append_cp(std::string& out, std::uint32_t cp);
std::vector<std::uint32_t> code_points(std::string_view s);
// Byte offsets of each code point start, plus s.size() at the end.
std::vector<std::size_t> cp_offsets(std::string_view s);
std::size_t length(std::string_view s);

// Python's str.isspace() set.
bool is_space(std::uint32_t cp);

enum class Side { kBoth, kLeft, kRight };
// str.strip()/lstrip()/rstrip(); `chars` empty optional = whitespace.
std::string strip(std::string_view s, const std::optional<std::string>& chars, Side side);
// str.split(sep, maxsplit); no sep = runs of whitespace, no empty items.
std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep,
                               long maxsplit);
std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep,
                                long maxsplit);
std::vector<std::string> splitlines(std::string_view s);
// str.replace(old, new, count); count < 0 = all.
std::string replace(std::string_view s, std::string_view old, std::string_view repl, long count);
std::string lower(std::string_view s);
std::string upper(std::string_view s);
// Python str.title() (word = run of letters) and str.capitalize().
std::string title(std::string_view s);
std::string capitalize(std::string_view s);
// jinja2's |title filter (words begin after '-', whitespace, '(', '{', '[', '<').
std::string jinja_title(std::string_view s);
// Code-point find; returns -1 when absent.
long find(std::string_view s, std::string_view sub, bool from_right);
long count(std::string_view s, std::string_view sub);

// Python slice semantics (negative indices, negative steps, clamping) over n items: the indices
// selected, in order. step 0 is rejected by the caller.
std::vector<long> slice_indices(long n, std::optional<long> start, std::optional<long> stop,
                                long step);

// Python's repr of a str: quotes chosen as Python chooses them, control characters escaped.
std::string repr(std::string_view s);
// A JSON string literal as json.dumps(ensure_ascii=False) writes it.
void append_json_string(std::string& out, std::string_view s, bool ensure_ascii = false);

}  // namespace spore::nlp::tmpl::pystr
