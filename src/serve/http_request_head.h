// Reading an HTTP/1.1 request head as RFC 9112 says, strictly (NOTE [HTTP transport]): the
// request line, the header fields, and the framing of the body that follows. Bad input is an
// ApiError with the status to answer (400, 413, 431, 501, 505) and OpenAI's error object.
//
//   http::HeadScanner scan(limits);
//   size_t n = scan.feed(buffered);          // 0 while the blank line has not arrived
//   http::RequestHead h = http::parse_head(std::string_view(buffered).substr(0, n), limits);
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace spore::serve::http {

struct Limits {
  std::size_t max_head_bytes = 16 * 1024;      // request line + fields + blank line: more is 431
  std::size_t max_headers = 100;               // header field lines: more is 431
  std::size_t max_body_bytes = std::size_t{1} << 20;  // received and inflated body: more is 413
};

enum class BodyFraming { kNone, kLength, kChunked };

struct RequestHead {
  std::string method;
  std::string target;     // as sent
  std::string path;       // target's path (absolute-form: without scheme and authority), no query
  std::string query;      // after '?', without it
  int minor_version = 1;  // HTTP/1.<minor>
  std::vector<std::pair<std::string, std::string>> headers;  // names as sent, values without OWS
  std::string authority;  // absolute-form's authority, else the Host field ("" when none)
  BodyFraming framing = BodyFraming::kNone;
  uint64_t content_length = 0;  // kLength
  std::string content_encoding;  // "" (identity), "gzip" or "deflate"
  bool keep_alive = true;        // HTTP/1.1 unless "Connection: close"; 1.0 only with keep-alive
  bool expect_continue = false;  // "Expect: 100-continue"

  // The first value of a field (case-insensitive name); nullptr when absent.
  const std::string* find(std::string_view name) const;
};

// Finds the end of a head in a buffer that grows between calls (each call looks only at the
// bytes it has not seen), counting field lines as it goes, so a head that is too large or has
// too many fields is refused (431) as soon as that is known, not when its end arrives.
class HeadScanner {
 public:
  explicit HeadScanner(const Limits& limits) : limits_(limits) {}
  // `buffered`: every byte received for this request so far. Returns the head's length through
  // its blank line, or 0 while incomplete. Throws ApiError 431.
  std::size_t feed(std::string_view buffered);
  void reset() { *this = HeadScanner(limits_); }

 private:
  Limits limits_;
  std::size_t pos_ = 0;         // bytes looked at
  std::size_t line_start_ = 0;  // where the current line starts
  std::size_t lines_ = 0;       // complete non-empty lines (request line + fields)
};

// Parses a complete head (what HeadScanner::feed measured). Throws ApiError: 400 (malformed,
// conflicting Content-Length, Content-Length with Transfer-Encoding, no or two Host fields in
// HTTP/1.1), 413 (Content-Length over the limit), 415 (Content-Encoding other than gzip or
// deflate), 431, 501 (a transfer coding other than chunked), 505 (not HTTP/1.x).
RequestHead parse_head(std::string_view head, const Limits& limits);

}  // namespace spore::serve::http
