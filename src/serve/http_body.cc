#include "serve/http_body.h"

#include <strings.h>
#include <zlib.h>

#include <algorithm>

#include "serve/api_error.h"

namespace spore::serve::http {

namespace {

constexpr std::size_t kMaxLine = 4096;          // a chunk-size line with its extensions
constexpr std::size_t kMaxTrailer = 16 * 1024;  // all trailer fields together

ApiError bad_chunked(const std::string& what) {
  return ApiError(400, "Malformed chunked body: " + what, "invalid_request_error", "", "bad_chunked_encoding");
}

ApiError too_large(std::size_t max) {
  return ApiError(413, "The request body is larger than this server takes (" + std::to_string(max) + " bytes); send less",
                  "invalid_request_error", "", "body_too_large");
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

void ChunkedDecoder::size_line(std::string_view line) {
  std::size_t size = 0, i = 0;
  for (; i < line.size() && hex_value(line[i]) >= 0; ++i) {
    if (size > (max_body_ >> 4) + 1) throw too_large(max_body_);  // before it could overflow
    size = size * 16 + (std::size_t)hex_value(line[i]);
  }
  if (i == 0) throw bad_chunked("a chunk size is not a hexadecimal number");
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  if (i < line.size() && line[i] != ';') throw bad_chunked("junk after a chunk size");
  if (size > max_body_ - decoded_) throw too_large(max_body_);
  remaining_ = size;
  state_ = size == 0 ? State::kTrailer : State::kData;
}

std::size_t ChunkedDecoder::feed(std::string_view in, std::string& out) {
  std::size_t used = 0;
  while (used < in.size() && state_ != State::kDone) {
    if (state_ == State::kData) {
      const std::size_t n = std::min(remaining_, in.size() - used);
      out.append(in.data() + used, n);
      used += n;
      remaining_ -= n;
      decoded_ += n;
      if (remaining_ == 0) state_ = State::kDataEnd;
      continue;
    }
    // The other states read lines.
    const std::size_t lf = in.find('\n', used);
    const std::size_t end = lf == std::string_view::npos ? in.size() : lf;
    line_.append(in.data() + used, end - used);
    used = lf == std::string_view::npos ? in.size() : lf + 1;
    if (line_.size() > (state_ == State::kTrailer ? kMaxTrailer : kMaxLine))
      throw state_ == State::kTrailer ? bad_chunked("the trailer is too long") : bad_chunked("a chunk-size line is too long");
    if (lf == std::string_view::npos) break;  // the line goes on in the next read
    std::string_view line = line_;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    switch (state_) {
      case State::kSize: size_line(line); break;
      case State::kDataEnd:
        if (!line.empty()) throw bad_chunked("a chunk's data is longer than its size");
        state_ = State::kSize;
        break;
      case State::kTrailer:
        trailer_bytes_ += line_.size() + 1;
        if (trailer_bytes_ > kMaxTrailer) throw bad_chunked("the trailer is too long");
        if (line.empty()) state_ = State::kDone;
        break;
      default: break;
    }
    line_.clear();
  }
  return used;
}

std::string inflate_body(std::string_view in, const std::string& encoding, std::size_t max_out) {
  // windowBits: 16 + 15 reads gzip; 15 reads zlib-wrapped deflate; -15 raw deflate.
  const bool gzip = strcasecmp(encoding.c_str(), "gzip") == 0;
  const bool raw = !gzip && !in.empty() && (static_cast<unsigned char>(in[0]) & 0x0f) != 8;  // no zlib header
  z_stream z{};
  if (inflateInit2(&z, gzip ? 16 + 15 : raw ? -15 : 15) != Z_OK)
    throw ApiError(500, "zlib could not start inflating", "server_error");
  std::string out;
  char buf[64 * 1024];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = (uInt)in.size();
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    const std::size_t got = sizeof buf - z.avail_out;
    if (rc != Z_OK && rc != Z_STREAM_END) break;  // Z_BUF_ERROR: the input ended early
    if (got > max_out - out.size()) {
      inflateEnd(&z);
      throw ApiError(413, "The request body inflates to more than this server takes (" + std::to_string(max_out) +
                              " bytes); send less",
                     "invalid_request_error", "", "body_too_large");
    }
    out.append(buf, got);
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END || z.avail_in != 0)
    throw ApiError(400, "The request body is not one whole " + encoding + " stream (Content-Encoding: " + encoding + "); send the compressed bytes as they are",
                   "invalid_request_error", "", "bad_content_encoding");
  return out;
}

}  // namespace spore::serve::http
