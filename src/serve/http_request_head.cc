#include "serve/http_request_head.h"

#include <strings.h>

#include "serve/api_error.h"

namespace spore::serve::http {

namespace {

ApiError bad(const std::string& message, const std::string& code = "bad_request") {
  return ApiError(400, message, "invalid_request_error", "", code);
}

ApiError too_large_head(const Limits& l) {
  return ApiError(431,
                  "The request head is larger than this server takes (at most " + std::to_string(l.max_headers) +
                      " header fields and " + std::to_string(l.max_head_bytes) + " bytes); send fewer or shorter headers",
                  "invalid_request_error", "", "headers_too_large");
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

// RFC 9110 5.6.2: tchar.
bool is_tchar(unsigned char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  for (char t : std::string_view("!#$%&'*+-.^_`|~"))
    if (c == (unsigned char)t) return true;
  return false;
}

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Splits a comma-separated list field into its trimmed, non-empty members.
std::vector<std::string_view> list_members(std::string_view v) {
  std::vector<std::string_view> out;
  while (true) {
    const size_t comma = v.find(',');
    std::string_view m = trim_ows(v.substr(0, comma));
    if (!m.empty()) out.push_back(m);
    if (comma == std::string_view::npos) break;
    v.remove_prefix(comma + 1);
  }
  return out;
}

// The next line of `head` from `pos`, without its LF and an optional CR before it.
std::string_view next_line(std::string_view head, size_t& pos) {
  const size_t lf = head.find('\n', pos);
  const size_t end = lf == std::string_view::npos ? head.size() : lf;
  std::string_view line = head.substr(pos, end - pos);
  pos = lf == std::string_view::npos ? head.size() : lf + 1;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

void parse_request_line(std::string_view line, RequestHead& h) {
  // method SP request-target SP HTTP-version: exactly single spaces (RFC 9112 3).
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    throw bad("Malformed request line; expected 'METHOD /path HTTP/1.1'");
  const std::string_view method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1),
                         version = line.substr(sp2 + 1);
  if (method.empty()) throw bad("Malformed request line: no method");
  for (unsigned char c : method)
    if (!is_tchar(c)) throw bad("Malformed request line: the method has a character a method cannot have");
  if (target.empty()) throw bad("Malformed request line: no request target");
  for (unsigned char c : target)
    if (c <= 0x20 || c == 0x7f) throw bad("Malformed request target: control characters or spaces");
  if (version.size() != 8 || version.compare(0, 5, "HTTP/") != 0 || version[6] != '.' || version[5] < '0' ||
      version[5] > '9' || version[7] < '0' || version[7] > '9')
    throw bad("Malformed request line: the version must read HTTP/1.1");
  if (version[5] != '1')
    throw ApiError(505, "HTTP version " + std::string(version.substr(5)) + " is not supported; use HTTP/1.1",
                   "invalid_request_error", "", "http_version_not_supported");
  h.method = method;
  h.target = target;
  h.minor_version = version[7] - '0';

  std::string_view rest = target;
  if (rest.front() != '/') {
    // absolute-form (RFC 9112 3.2.2: a server MUST accept it); its authority replaces Host.
    const size_t scheme_end = rest.find("://");
    if (scheme_end == std::string_view::npos || !(iequals(rest.substr(0, scheme_end), "http") ||
                                                  iequals(rest.substr(0, scheme_end), "https"))) {
      if (target == "*" && method == "OPTIONS") {
        h.path.assign(1, '*');  // (assign, not = "*": GCC 12's -Wrestrict misfires on the latter)
        return;
      }
      throw bad("Malformed request target '" + std::string(target.substr(0, 64)) + "'; expected a path such as /v1/models");
    }
    rest.remove_prefix(scheme_end + 3);
    const size_t path_start = rest.find_first_of("/?");
    h.authority = rest.substr(0, path_start);
    if (h.authority.empty() || h.authority.find('@') != std::string::npos)
      throw bad("Malformed request target: the authority must be host[:port]");
    rest = path_start == std::string_view::npos ? std::string_view("/") : rest.substr(path_start);
    if (rest.front() == '?') {
      h.path.assign(1, '/');
      h.query = rest.substr(1);
      return;
    }
  }
  const size_t q = rest.find('?');
  h.path = rest.substr(0, q);
  if (q != std::string_view::npos) h.query = rest.substr(q + 1);
}

void parse_field(std::string_view line, RequestHead& h) {
  if (line.front() == ' ' || line.front() == '\t')
    throw bad("A header line starts with whitespace (obsolete line folding, RFC 9112 5.2); send each field on one line");
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos || colon == 0) throw bad("Malformed header line (no 'name:')");
  const std::string_view name = line.substr(0, colon);
  for (unsigned char c : name)
    if (!is_tchar(c))
      throw bad("Malformed header name '" + std::string(name.substr(0, 64)) +
                "' (no whitespace before the colon, RFC 9112 5.1)");
  const std::string_view value = trim_ows(line.substr(colon + 1));
  for (unsigned char c : value)
    if (c == 0 || c == '\r' || c == '\n' || (c < 0x20 && c != '\t') || c == 0x7f)
      throw bad("The value of header '" + std::string(name) + "' holds a control character");
  h.headers.emplace_back(std::string(name), std::string(value));
}

// Content-Length: every value (repeated fields, comma lists) must be the same number.
void read_content_length(RequestHead& h, const Limits& limits) {
  bool seen = false;
  uint64_t value = 0;
  bool huge = false;
  for (const auto& [name, v] : h.headers) {
    if (!iequals(name, "Content-Length")) continue;
    const auto members = list_members(v);
    if (members.empty()) throw bad("Content-Length is empty", "bad_content_length");
    for (std::string_view m : members) {
      uint64_t n = 0;
      bool big = false;
      for (unsigned char c : m) {
        if (c < '0' || c > '9') throw bad("Content-Length '" + std::string(m.substr(0, 32)) + "' is not a number", "bad_content_length");
        if (n > (UINT64_MAX - 9) / 10) big = true;
        else n = n * 10 + (c - '0');
      }
      if (seen && (n != value || big != huge))
        throw bad("Conflicting Content-Length values; send one", "conflicting_content_length");
      seen = true;
      value = n;
      huge = big;
    }
  }
  if (!seen) return;
  if (huge || value > limits.max_body_bytes)
    throw ApiError(413, "The request body is larger than this server takes (" + std::to_string(limits.max_body_bytes) +
                            " bytes); send less",
                   "invalid_request_error", "", "body_too_large");
  h.framing = BodyFraming::kLength;
  h.content_length = value;
}

void read_transfer_encoding(RequestHead& h) {
  std::vector<std::string_view> codings;
  bool any = false;
  for (const auto& [name, v] : h.headers)
    if (iequals(name, "Transfer-Encoding")) {
      any = true;
      for (std::string_view m : list_members(v)) codings.push_back(m);
    }
  if (!any) return;
  // RFC 9112 6.1: Content-Length with Transfer-Encoding is how requests are smuggled past a proxy.
  if (h.framing == BodyFraming::kLength)
    throw bad("Both Content-Length and Transfer-Encoding are set; send one (RFC 9112 6.1)", "conflicting_framing");
  if (h.minor_version == 0) throw bad("Transfer-Encoding in an HTTP/1.0 request; use HTTP/1.1 or Content-Length", "bad_transfer_encoding");
  if (codings.empty()) throw bad("Transfer-Encoding is empty", "bad_transfer_encoding");
  for (size_t i = 0; i < codings.size(); ++i) {
    const bool chunked = iequals(codings[i], "chunked");
    if (chunked && i + 1 == codings.size()) break;
    if (chunked) throw bad("'chunked' may be applied only once, as the last transfer coding", "bad_transfer_encoding");
    if (i + 1 == codings.size())
      throw bad("The last transfer coding must be 'chunked' (RFC 9112 6.3)", "bad_transfer_encoding");
    throw ApiError(501, "Transfer coding '" + std::string(codings[i].substr(0, 32)) + "' is not supported; send 'chunked' only",
                   "invalid_request_error", "", "unsupported_transfer_coding");
  }
  h.framing = BodyFraming::kChunked;
}

void read_other_fields(RequestHead& h) {
  int hosts = 0;
  std::string host;
  for (const auto& [name, v] : h.headers) {
    if (iequals(name, "Host")) {
      ++hosts;
      host = v;
    } else if (iequals(name, "Connection")) {
      for (std::string_view m : list_members(v)) {
        if (iequals(m, "close")) h.keep_alive = false;
        if (iequals(m, "keep-alive") && h.minor_version == 0) h.keep_alive = true;
      }
    } else if (iequals(name, "Expect")) {
      if (!iequals(v, "100-continue"))
        throw ApiError(417, "Expectation '" + v.substr(0, 32) + "' is not supported; only 100-continue is",
                       "invalid_request_error", "", "expectation_failed");
      h.expect_continue = true;
    } else if (iequals(name, "Content-Encoding")) {
      const auto members = list_members(v);
      if (!h.content_encoding.empty() || members.size() > 1)
        throw ApiError(415, "One Content-Encoding at most (gzip or deflate)", "invalid_request_error", "",
                       "unsupported_content_encoding");
      for (std::string_view m : members) {
        if (iequals(m, "gzip") || iequals(m, "x-gzip")) h.content_encoding = "gzip";
        else if (iequals(m, "deflate")) h.content_encoding = "deflate";
        else if (!iequals(m, "identity"))
          throw ApiError(415, "Content-Encoding '" + std::string(m.substr(0, 32)) + "' is not supported; send gzip, deflate or none",
                         "invalid_request_error", "", "unsupported_content_encoding");
      }
    }
  }
  // RFC 9112 3.2: exactly one Host in HTTP/1.1 (and at most one in 1.0).
  if (hosts > 1) throw bad("More than one Host header; send one", "bad_host");
  if (hosts == 0 && h.minor_version >= 1 && h.authority.empty()) throw bad("An HTTP/1.1 request needs a Host header", "bad_host");
  if (h.authority.empty()) h.authority = host;
}

}  // namespace

const std::string* RequestHead::find(std::string_view name) const {
  for (const auto& [n, v] : headers)
    if (iequals(n, name)) return &v;
  return nullptr;
}

std::size_t HeadScanner::feed(std::string_view buffered) {
  for (; pos_ < buffered.size(); ++pos_) {
    if (pos_ + 1 > limits_.max_head_bytes) throw too_large_head(limits_);
    if (buffered[pos_] != '\n') continue;
    std::string_view line = buffered.substr(line_start_, pos_ - line_start_);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    line_start_ = pos_ + 1;
    if (line.empty()) {
      if (lines_ > 0) return ++pos_;  // the blank line: the head ends here
      continue;                       // an empty line before the request line is ignored (RFC 9112 2.2)
    }
    // The request line plus at most max_headers fields.
    if (++lines_ > limits_.max_headers + 1) throw too_large_head(limits_);
  }
  return 0;
}

RequestHead parse_head(std::string_view head, const Limits& limits) {
  if (head.size() > limits.max_head_bytes) throw too_large_head(limits);
  RequestHead h;
  size_t pos = 0;
  std::string_view line;
  do {
    if (pos >= head.size()) throw bad("Empty request");
    line = next_line(head, pos);
  } while (line.empty());
  for (unsigned char c : line)
    if (c == '\r' || c == 0) throw bad("Malformed request line: a bare CR or NUL");
  parse_request_line(line, h);
  while (pos < head.size()) {
    line = next_line(head, pos);
    if (line.empty()) break;
    if (h.headers.size() >= limits.max_headers) throw too_large_head(limits);
    parse_field(line, h);
  }
  if (h.minor_version == 0) h.keep_alive = false;
  read_content_length(h, limits);
  read_transfer_encoding(h);
  read_other_fields(h);
  return h;
}

}  // namespace spore::serve::http
