// Request bodies under one limit whatever their framing or compression (NOTE [HTTP transport]):
// a chunked body is decoded as it arrives and refused (413) the moment its decoded size would
// pass the limit, before the bytes are read; a gzip or deflate body is inflated by zlib in pieces
// and refused as soon as the inflated size passes the limit, so a small bomb never becomes a
// large buffer.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace spore::serve::http {

// RFC 9112 7.1: chunk-size [chunk-ext] CRLF chunk-data CRLF ... 0 CRLF trailer-section CRLF.
// Chunk extensions are skipped; trailer fields are read and dropped (bounded like a head).
class ChunkedDecoder {
 public:
  explicit ChunkedDecoder(std::size_t max_body) : max_body_(max_body) {}
  // Consumes bytes from `in`, appending the decoded data to `out`; returns how many it used
  // (all of `in`, or fewer when the body ends inside it: the rest is the next request). Throws
  // ApiError 400 (bad framing) or 413 (decoded size over max_body).
  std::size_t feed(std::string_view in, std::string& out);
  bool done() const { return state_ == State::kDone; }

 private:
  enum class State { kSize, kData, kDataEnd, kTrailer, kDone };
  void size_line(std::string_view line);
  std::size_t max_body_;
  State state_ = State::kSize;
  std::string line_;             // a line not yet complete
  std::size_t remaining_ = 0;    // data bytes left in this chunk
  std::size_t decoded_ = 0;      // data bytes so far
  std::size_t trailer_bytes_ = 0;
};

// Inflates a body sent with Content-Encoding gzip or deflate (zlib-wrapped; a raw deflate stream
// is accepted too, as browsers' and curl's clients differ). Throws ApiError 413 when the output
// would exceed max_out, 400 when the bytes are not what the encoding says.
std::string inflate_body(std::string_view in, const std::string& encoding, std::size_t max_out);

}  // namespace spore::serve::http
