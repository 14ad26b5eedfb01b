// CsvSource: numeric CSV files, read and checked whole when the source is built, so a bad cell
// is reported at once with its file, line and field rather than midway through training.
//
// NOTE [Streaming CSV]
// The text is read a chunk at a time (TextStream, inflating gzip on the fly) and split into lines
// as it comes; each row's values go straight into the columns' byte buffers. Memory is the
// columns' binary values plus one line buffer (at most kMaxLineBytes), never the text itself, so a
// file of gigabytes of blank lines or padding costs time, not memory.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>

#include "data/file_io.h"
#include "data/node.h"
#include "data/stages.h"

namespace spore::data {

namespace detail {
namespace {

struct CsvContext {
  const std::string& path;
  int64_t line = 0;
  std::string where(size_t field) const {
    return "'" + path + "', line " + std::to_string(line) + ", field " + std::to_string(field + 1);
  }
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Splits one line into fields; a field may be double-quoted ("" is a quote inside it).
std::vector<std::string> split_fields(std::string_view line, char delim, const CsvContext& ctx) {
  std::vector<std::string> fields;
  size_t p = 0;
  for (;;) {
    while (p < line.size() && (line[p] == ' ' || line[p] == '\t') && line[p] != delim) ++p;
    std::string field;
    if (p < line.size() && line[p] == '"') {
      ++p;
      for (;;) {
        if (p >= line.size())
          throw Error(ErrorCode::kFormat, ctx.where(fields.size()) +
                                              ": a quoted field is not closed "
                                              "(fields cannot span lines)");
        if (line[p] == '"') {
          if (p + 1 < line.size() && line[p + 1] == '"') {
            field += '"';
            p += 2;
            continue;
          }
          ++p;
          break;
        }
        field += line[p++];
      }
      while (p < line.size() && (line[p] == ' ' || line[p] == '\t') && line[p] != delim) ++p;
      if (p < line.size() && line[p] != delim)
        throw Error(ErrorCode::kFormat,
                    ctx.where(fields.size()) + ": text after the closing quote");
    } else {
      size_t end = line.find(delim, p);
      if (end == std::string_view::npos) end = line.size();
      field = std::string(trim(line.substr(p, end - p)));
      p = end;
    }
    fields.push_back(std::move(field));
    if (p >= line.size()) return fields;
    ++p;  // the delimiter
  }
}

std::string printable(const std::string& s) {
  std::string out;
  for (char c : s.substr(0, 40)) out += (c >= 32 && c < 127) ? c : '?';
  return out + (s.size() > 40 ? "..." : "");
}

// Appends the value of `text` as `dtype` to `out`, or throws kFormat naming the cell.
void append_value(const std::string& text, DType dtype, std::vector<unsigned char>& out,
                  const CsvContext& ctx, size_t field, const std::string& column) {
  auto bad = [&](const std::string& why) {
    return Error(ErrorCode::kFormat,
                 ctx.where(field) + " (column '" + column + "'): '" + printable(text) + "' " + why);
  };
  std::string_view s = text;
  if (s.empty())
    throw bad(std::string("is empty; every cell needs a ") + dtype_name(dtype) + " value");
  if (s.size() > 1 && s[0] == '+' && s[1] != '-' && s[1] != '+') s.remove_prefix(1);
  auto put = [&](auto v) {
    unsigned char b[sizeof(v)];
    std::memcpy(b, &v, sizeof(v));
    out.insert(out.end(), b, b + sizeof(v));
  };
  if (dtype == DType::kBool) {
    if (s == "1" || s == "true" || s == "True" || s == "TRUE") return put(uint8_t{1});
    if (s == "0" || s == "false" || s == "False" || s == "FALSE") return put(uint8_t{0});
    throw bad("is not a bool (0, 1, true or false)");
  }
  if (is_floating(dtype)) {
    double v = 0;
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec == std::errc::result_out_of_range) throw bad("is out of the range of float64");
    if (r.ec != std::errc() || r.ptr != s.data() + s.size())
      throw bad(std::string("is not a number (column dtype ") + dtype_name(dtype) + ")");
    switch (dtype) {
      case DType::kFloat64:
        return put(v);
      case DType::kFloat32: {
        float f = (float)v;
        if (std::isinf(f) && !std::isinf(v)) throw bad("is out of the range of float32");
        return put(f);
      }
      case DType::kFloat16: {
        Half h((float)v);
        if (std::isinf((float)h) && !std::isinf(v))
          throw bad("is out of the range of float16 (+-65504)");
        return put(h.bits);
      }
      default: {
        BFloat16 b((float)v);
        if (std::isinf((float)b) && !std::isinf(v)) throw bad("is out of the range of bfloat16");
        return put(b.bits);
      }
    }
  }
  int64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec == std::errc::result_out_of_range) throw bad("is out of the range of int64");
  if (r.ec != std::errc() || r.ptr != s.data() + s.size())
    throw bad(std::string("is not an integer (column dtype ") + dtype_name(dtype) + ")");
  auto in_range = [&](int64_t lo, int64_t hi) {
    if (v < lo || v > hi)
      throw bad(std::string("is out of the range of ") + dtype_name(dtype) + " [" +
                std::to_string(lo) + ", " + std::to_string(hi) + "]");
  };
  switch (dtype) {
    case DType::kInt8:
      in_range(-128, 127);
      return put((int8_t)v);
    case DType::kUInt8:
      in_range(0, 255);
      return put((uint8_t)v);
    case DType::kInt32:
      in_range(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
      return put((int32_t)v);
    default:
      return put(v);
  }
}

// A line longer than this is refused: it bounds the line buffer, and no numeric CSV needs more.
constexpr size_t kMaxLineBytes = size_t{64} << 20;
constexpr size_t kChunkBytes = size_t{1} << 20;

// The lines of a TextStream that are not blank, with their 1-based numbers, one at a time.
class LineReader {
 public:
  explicit LineReader(TextStream& in) : in_(in), buf_(kChunkBytes) {}

  // The next line that is not blank (without its "\r\n" or "\n"), or false at the end. The view
  // stays valid until the next call.
  bool next(std::string_view& line, int64_t& number) {
    for (;;) {
      if (!take_line(line)) return false;
      number = ++number_;
      if (number_ == 1 && line.size() >= 3 && std::memcmp(line.data(), "\xEF\xBB\xBF", 3) == 0)
        line.remove_prefix(3);  // BOM
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (!trim(line).empty()) return true;
    }
  }

 private:
  // The next physical line, refilling the buffer as needed.
  bool take_line(std::string_view& line) {
    size_t scanned = begin_;  // bytes before this have no '\n'
    for (;;) {
      const void* nl = std::memchr(buf_.data() + scanned, '\n', end_ - scanned);
      if (nl) {
        const size_t at = (size_t)(static_cast<const char*>(nl) - buf_.data());
        line = std::string_view(buf_.data() + begin_, at - begin_);
        begin_ = at + 1;
        return true;
      }
      if (eof_) {
        if (begin_ == end_) return false;
        line = std::string_view(buf_.data() + begin_, end_ - begin_);  // no final newline
        begin_ = end_;
        return true;
      }
      // Keep the partial line at the front and read more after it.
      const size_t partial = end_ - begin_;
      if (begin_ > 0) {
        std::memmove(buf_.data(), buf_.data() + begin_, partial);
        begin_ = 0;
        end_ = partial;
      }
      if (end_ == buf_.size()) {
        if (buf_.size() >= kMaxLineBytes)
          format_error(in_.path(), "line " + std::to_string(number_ + 1) + " is longer than " +
                                       std::to_string(kMaxLineBytes >> 20) +
                                       " MiB; a CSV line this long is refused");
        buf_.resize(std::min(buf_.size() * 2, kMaxLineBytes));
      }
      scanned = end_;
      const size_t got = in_.read(buf_.data() + end_, buf_.size() - end_);
      if (got == 0) eof_ = true;
      end_ += got;
    }
  }

  TextStream& in_;
  std::vector<char> buf_;
  size_t begin_ = 0, end_ = 0;  // the unread bytes are buf_[begin_, end_)
  bool eof_ = false;
  int64_t number_ = 0;  // physical lines handed out so far
};

}  // namespace
}  // namespace detail

Dataset CsvSource(const std::string& path, const CsvOptions& options) {
  using namespace detail;
  const char delim = options.delimiter;
  if (delim == '"' || delim == '\n' || delim == '\r' || delim == '\0')
    throw Error(ErrorCode::kValue,
                "CsvSource('" + path + "'): the delimiter cannot be a quote, a line break or NUL");
  for (const CsvColumn& c : options.columns)
    if (c.width < 0)
      throw Error(ErrorCode::kValue, "CsvSource('" + path + "'): column '" + c.name +
                                         "' has width " + std::to_string(c.width) +
                                         "; use 0 (one field) or a positive count");

  TextStream text(path);
  LineReader lines(text);
  std::string_view first;
  int64_t first_number = 0;
  const bool has_first = lines.next(first, first_number);

  std::vector<CsvColumn> columns = options.columns;
  bool first_is_data = has_first;
  size_t expected = 0;
  for (const CsvColumn& c : columns) expected += (size_t)std::max<int64_t>(1, c.width);
  std::string expected_from = "the columns given";
  if (options.header) {
    if (!has_first) format_error(path, "the file is empty but a header line was expected");
    CsvContext ctx{path, first_number};
    auto names = split_fields(first, delim, ctx);
    if (columns.empty()) {
      for (size_t i = 0; i < names.size(); ++i)
        columns.push_back(
            {names[i].empty() ? "column_" + std::to_string(i) : names[i], DType::kFloat32, 0});
      expected = names.size();
      expected_from = "the header on line " + std::to_string(first_number);
    } else if (names.size() != expected) {
      format_error(path, "the header on line " + std::to_string(first_number) + " has " +
                             std::to_string(names.size()) +
                             " fields but the columns given describe " + std::to_string(expected));
    }
    first_is_data = false;
  } else if (columns.empty()) {
    if (!has_first)
      format_error(path,
                   "the file has no lines and no columns were given; cannot tell its columns");
    CsvContext ctx{path, first_number};
    size_t n = split_fields(first, delim, ctx).size();
    for (size_t i = 0; i < n; ++i)
      columns.push_back({"column_" + std::to_string(i), DType::kFloat32, 0});
    expected = n;
    expected_from = "the first line (" + std::to_string(first_number) + ")";
  }
  std::vector<std::string> names;
  for (const CsvColumn& c : columns) names.push_back(c.name);
  check_unique_names(names, "CsvSource('" + path + "')");

  std::vector<std::vector<unsigned char>> data(columns.size());
  int64_t rows = 0;
  std::string_view line = first;
  int64_t number = first_number;
  for (bool more = first_is_data || lines.next(line, number); more; more = lines.next(line, number)) {
    CsvContext ctx{path, number};
    auto fields = split_fields(line, delim, ctx);
    if (fields.size() != expected)
      throw Error(ErrorCode::kFormat, "'" + path + "', line " + std::to_string(ctx.line) + ": " +
                                          std::to_string(fields.size()) + " fields, but " +
                                          expected_from + " has " + std::to_string(expected) +
                                          "; every line needs the same fields");
    size_t field = 0;
    for (size_t c = 0; c < columns.size(); ++c) {
      int64_t w = std::max<int64_t>(1, columns[c].width);
      for (int64_t k = 0; k < w; ++k, ++field)
        append_value(fields[field], columns[c].dtype, data[c], ctx, field, columns[c].name);
    }
    ++rows;
  }
  std::vector<Tensor> arrays;
  for (size_t c = 0; c < columns.size(); ++c) {
    Shape shape = columns[c].width > 0 ? Shape{rows, columns[c].width} : Shape{rows};
    arrays.push_back(Tensor::from_bytes(data[c].data(), shape, columns[c].dtype, Device::cpu()));
  }
  return Dataset(make_table_node("csv", std::move(names), std::move(arrays)));
}

}  // namespace spore::data
