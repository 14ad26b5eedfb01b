// libFuzzer target: the server's HTTP request reader (src/serve/http_request_head.cc,
// http_body.cc; NOTE [HTTP transport]), fed the bytes a client sends on a connection. The first
// byte sets the size of the pieces the bytes arrive in (as reads would split them); the rest is
// the stream: a head, then a body.
//
// Contract checked: the head reads or is refused with one of the statuses the transport sends
// (400, 413, 415, 417, 431, 501, 505) and an error object that serialises; the head's end is
// found at the same place whatever the pieces; a parsed head's framing is consistent (one of
// Content-Length within the limit or chunked, never both); a chunked body decodes to the same
// bytes and the same outcome whole or piece by piece, never past the limit; an inflated body
// never passes its limit.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "serve/api_error.h"
#include "serve/http_body.h"
#include "serve/http_request_head.h"

namespace {

using spore::fuzz::require;
namespace http = spore::serve::http;

void check_error(const spore::serve::ApiError& e) {
  const int s = e.status;
  require(s == 400 || s == 413 || s == 415 || s == 417 || s == 431 || s == 501 || s == 505, "a transport status");
  require(*e.what() != '\0', "an error says what is wrong");
  (void)e.to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Feeds the scanner `piece` bytes at a time; the head's length, 0 when incomplete, -status on refusal.
long scan(std::string_view in, size_t piece, const http::Limits& limits) {
  http::HeadScanner s(limits);
  try {
    for (size_t n = piece; ; n += piece) {
      const size_t end = n < in.size() ? n : in.size();
      if (const size_t got = s.feed(in.substr(0, end))) return (long)got;
      if (end == in.size()) return 0;
    }
  } catch (const spore::serve::ApiError& e) {
    check_error(e);
    return -e.status;
  }
}

// Decodes a chunked body `piece` bytes at a time: the status (0 done, 1 incomplete, or the
// refusal), the data, and the bytes used.
struct Decoded {
  int status = 1;
  std::string data;
  size_t used = 0;
};
Decoded decode(std::string_view in, size_t piece, size_t max) {
  http::ChunkedDecoder d(max);
  Decoded r;
  try {
    while (r.used < in.size() && !d.done()) {
      const std::string_view part = in.substr(r.used, piece);
      const size_t n = d.feed(part, r.data);
      require(n <= part.size(), "a decoder uses at most what it is given");
      require(n == part.size() || d.done(), "a decoder stops early only at the end of the body");
      r.used += n;
    }
    r.status = d.done() ? 0 : 1;
  } catch (const spore::serve::ApiError& e) {
    check_error(e);
    r.status = e.status;
  }
  require(r.data.size() <= max, "a decoded body within the limit");
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t piece = 1 + data[0] % 64;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  http::Limits limits;
  limits.max_head_bytes = 2048;
  limits.max_headers = 16;
  limits.max_body_bytes = 4096;

  const long whole = scan(in, in.size() ? in.size() : 1, limits);
  const long pieces = scan(in, piece, limits);
  require(whole == pieces, "the head's end (or its refusal) does not depend on how the bytes arrive");
  if (whole <= 0) return 0;

  http::RequestHead h;
  try {
    h = http::parse_head(in.substr(0, (size_t)whole), limits);
  } catch (const spore::serve::ApiError& e) {
    check_error(e);
    return 0;
  }
  require(!h.method.empty() && !h.path.empty(), "a method and a path");
  require(h.minor_version >= 0 && h.minor_version <= 9, "HTTP/1.x");
  const bool has_cl = h.find("Content-Length") != nullptr, has_te = h.find("Transfer-Encoding") != nullptr;
  require(!(has_cl && has_te), "never both Content-Length and Transfer-Encoding");
  if (h.framing == http::BodyFraming::kLength) require(h.content_length <= limits.max_body_bytes, "a length within the limit");
  if (h.framing == http::BodyFraming::kChunked) require(has_te && !has_cl, "chunked only from Transfer-Encoding");

  const std::string_view rest = in.substr((size_t)whole);
  std::string body;
  if (h.framing == http::BodyFraming::kChunked) {
    const Decoded a = decode(rest, rest.size() ? rest.size() : 1, limits.max_body_bytes);
    const Decoded b = decode(rest, piece, limits.max_body_bytes);
    require(a.status == b.status, "the same outcome whole or in pieces");
    if (a.status == 0) require(a.data == b.data && a.used == b.used, "the same bytes whole or in pieces");
    if (a.status != 0) return 0;
    body = a.data;
  } else if (h.framing == http::BodyFraming::kLength) {
    body = std::string(rest.substr(0, (size_t)h.content_length));
  }
  if (!h.content_encoding.empty()) {
    try {
      const std::string out = http::inflate_body(body, h.content_encoding, limits.max_body_bytes);
      require(out.size() <= limits.max_body_bytes, "an inflated body within the limit");
    } catch (const spore::serve::ApiError& e) {
      check_error(e);
    }
  }
  return 0;
}
