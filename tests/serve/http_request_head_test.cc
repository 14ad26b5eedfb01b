// The HTTP transport's readers on their own (NOTE [HTTP transport]): request heads against RFC
// 9112's framing rules, chunked bodies against the RFC's own example, gzip/deflate bodies made by
// zlib's writer, and the host check against DNS-rebinding shapes.
#include <gtest/gtest.h>

#include <string>

#include "serve/zlib_compress.h"
#include "serve/api_error.h"
#include "serve/http_body.h"
#include "serve/http_host_check.h"
#include "serve/http_request_head.h"

namespace {

using spore::serve::ApiError;
namespace http = spore::serve::http;

// The status and code a head is refused with (0 and "" when it is accepted).
std::pair<int, std::string> refusal(const std::string& head, http::Limits limits = {}) {
  try {
    http::parse_head(head, limits);
    return {0, ""};
  } catch (const ApiError& e) {
    return {e.status, e.code};
  }
}

TEST(HttpHead, ParsesRequestLineFieldsAndFraming) {
  const auto h = http::parse_head(
      "POST /v1/completions?x=1 HTTP/1.1\r\nHost: localhost:8080\r\nContent-Length:  12 \r\nX-A:\tb c\r\n\r\n", {});
  EXPECT_EQ(h.method, "POST");
  EXPECT_EQ(h.path, "/v1/completions");
  EXPECT_EQ(h.query, "x=1");
  EXPECT_EQ(h.minor_version, 1);
  EXPECT_EQ(h.authority, "localhost:8080");
  EXPECT_EQ(h.framing, http::BodyFraming::kLength);
  EXPECT_EQ(h.content_length, 12u);
  ASSERT_NE(h.find("x-a"), nullptr);
  EXPECT_EQ(*h.find("x-a"), "b c");  // optional whitespace around the value dropped
  EXPECT_TRUE(h.keep_alive);
}

TEST(HttpHead, KeepAliveByVersionAndConnection) {
  EXPECT_FALSE(http::parse_head("GET / HTTP/1.0\r\n\r\n", {}).keep_alive);
  EXPECT_TRUE(http::parse_head("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", {}).keep_alive);
  EXPECT_FALSE(http::parse_head("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", {}).keep_alive);
}

TEST(HttpHead, AbsoluteFormAuthorityReplacesHost) {
  const auto h = http::parse_head("GET http://evil.example:8080/health HTTP/1.1\r\nHost: localhost\r\n\r\n", {});
  EXPECT_EQ(h.authority, "evil.example:8080");
  EXPECT_EQ(h.path, "/health");
}

// RFC 9112 6.3: the framing ambiguities a proxy and a server could read differently.
TEST(HttpHead, ConflictingFramingIsRefused) {
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"),
            std::make_pair(400, std::string("conflicting_content_length")));
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 6\r\n\r\n").first, 400);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"),
            std::make_pair(400, std::string("conflicting_framing")));
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n").first, 400);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\n").first, 400);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x5\r\n\r\n").first, 400);
  // The same value twice is one value.
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n").first, 0);
}

TEST(HttpHead, TransferCodings) {
  EXPECT_EQ(http::parse_head("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n\r\n", {}).framing,
            http::BodyFraming::kChunked);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n").first, 501);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n").first, 400);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n").first, 400);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n").first, 400);
  EXPECT_EQ(refusal("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n").first, 400);
}

TEST(HttpHead, BodyOverTheLimitIsRefusedFromItsLength) {
  http::Limits l;
  l.max_body_bytes = 100;
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 101\r\n\r\n", l).first, 413);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n", l).first, 0);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999999999\r\n\r\n", l).first, 413);
}

TEST(HttpHead, MalformedLinesAndHosts) {
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\n\r\n"), std::make_pair(400, std::string("bad_host")));  // no Host in 1.1
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n").first, 400);
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nHost : a\r\n\r\n").first, 400);                 // space before the colon
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\n  folded\r\n\r\n").first, 400);  // obs-fold
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nHost: a\r\nX: a\x01z\r\n\r\n").first, 400);
  EXPECT_EQ(refusal("GET  / HTTP/1.1\r\nHost: a\r\n\r\n").first, 400);
  EXPECT_EQ(refusal("GET / HTTP/2.0\r\nHost: a\r\n\r\n").first, 505);
  EXPECT_EQ(refusal("GET / HTTP/1.1x\r\nHost: a\r\n\r\n").first, 400);
  EXPECT_EQ(refusal("GET nowhere HTTP/1.1\r\nHost: a\r\n\r\n").first, 400);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nHost: a\r\nContent-Encoding: br\r\n\r\n").first, 415);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nHost: a\r\nContent-Encoding: gzip, gzip\r\n\r\n").first, 415);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\n\r\n").first, 417);
  EXPECT_EQ(refusal("\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n").first, 0);  // a leading empty line is ignored
}

TEST(HttpHead, ScannerFindsTheEndWhateverTheReads) {
  const std::string req = "GET /a HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\n";  // a pipelined second one
  http::HeadScanner whole({});
  EXPECT_EQ(whole.feed(req), 28u);
  http::HeadScanner bytewise({});
  size_t got = 0;
  for (size_t i = 1; i <= req.size() && got == 0; ++i) got = bytewise.feed(std::string_view(req).substr(0, i));
  EXPECT_EQ(got, 28u);
  http::HeadScanner partial({});
  EXPECT_EQ(partial.feed("GET / HTTP/1.1\r\nHost: a\r\n"), 0u);
}

// 431 as soon as the limit is passed, long before the head's end arrives.
TEST(HttpHead, ScannerRefusesTooManyOrTooLongFieldsEarly) {
  http::Limits l;
  std::string many = "GET / HTTP/1.1\r\n";
  for (size_t i = 0; i < l.max_headers; ++i) many += "X: 1\r\n";
  http::HeadScanner ok(l);
  EXPECT_EQ(ok.feed(many), 0u);  // exactly the limit: still reading
  many += "X: 1\r\n";
  http::HeadScanner over(l);
  try {
    over.feed(many);
    ADD_FAILURE() << "101 fields were taken";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 431);
  }
  http::HeadScanner long_line(l);
  try {
    long_line.feed("GET / HTTP/1.1\r\nX: " + std::string(l.max_head_bytes, 'a'));
    ADD_FAILURE() << "a head over the byte limit was taken";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 431);
  }
}

// RFC 9112 7.1's example body, with an extension and a trailer, whole and a byte at a time.
TEST(HttpChunked, DecodesTheRfcExample) {
  const std::string body = "4;name=value\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nExpires: never\r\n\r\nNEXT";
  http::ChunkedDecoder whole(1000);
  std::string out;
  EXPECT_EQ(whole.feed(body, out), body.size() - 4);  // "NEXT" is the next request
  EXPECT_TRUE(whole.done());
  EXPECT_EQ(out, "Wikipedia in\r\n\r\nchunks.");
  http::ChunkedDecoder bytewise(1000);
  std::string out2;
  for (size_t i = 0; i < body.size() && !bytewise.done(); ++i) bytewise.feed(std::string_view(body).substr(i, 1), out2);
  EXPECT_TRUE(bytewise.done());
  EXPECT_EQ(out2, out);
}

int chunked_refusal(const std::string& body, size_t max) {
  http::ChunkedDecoder d(max);
  std::string out;
  try {
    d.feed(body, out);
    return 0;
  } catch (const ApiError& e) {
    return e.status;
  }
}

TEST(HttpChunked, RefusesOversizeAndMalformed) {
  // The size line alone is enough to refuse: the data is never read.
  EXPECT_EQ(chunked_refusal("65\r\n", 100), 413);                  // 101 bytes announced
  EXPECT_EQ(chunked_refusal("32\r\n" + std::string(50, 'a') + "\r\n33\r\n", 100), 413);  // 50 + 51
  EXPECT_EQ(chunked_refusal("ffffffffffffffffffffffff\r\n", 100), 413);
  EXPECT_EQ(chunked_refusal("64\r\n" + std::string(100, 'a') + "\r\n0\r\n\r\n", 100), 0);
  EXPECT_EQ(chunked_refusal("zz\r\n", 100), 400);
  EXPECT_EQ(chunked_refusal("\r\n", 100), 400);
  EXPECT_EQ(chunked_refusal("2\r\nabc\r\n", 100), 400);  // more data than the size says
  EXPECT_EQ(chunked_refusal("2 x\r\n", 100), 400);
  EXPECT_EQ(chunked_refusal(std::string(5000, '0'), 100), 400);  // an endless size line
}

// gzip (windowBits 31), zlib (15) and raw deflate (-15) streams from zlib's own writer
// (zlib_compress.h) inflate to the text, within the limit.

int inflate_refusal(const std::string& in, const std::string& enc, size_t max) {
  try {
    http::inflate_body(in, enc, max);
    return 0;
  } catch (const ApiError& e) {
    return e.status;
  }
}

TEST(HttpInflate, GzipAndDeflateBodies) {
  const std::string text = R"({"prompt": "hello hello hello hello", "max_tokens": 4})";
  EXPECT_EQ(http::inflate_body(spore::test::zlib_compress(text, 31), "gzip", 1000), text);
  EXPECT_EQ(http::inflate_body(spore::test::zlib_compress(text, 15), "deflate", 1000), text);
  EXPECT_EQ(http::inflate_body(spore::test::zlib_compress(text, -15), "deflate", 1000), text);
  const std::string gz = spore::test::zlib_compress(text, 31);
  EXPECT_EQ(inflate_refusal(gz.substr(0, gz.size() - 6), "gzip", 1000), 400);  // cut short
  EXPECT_EQ(inflate_refusal(gz + "junk", "gzip", 1000), 400);
  EXPECT_EQ(inflate_refusal("not gzip at all", "gzip", 1000), 400);
}

// 64 MiB of zeros compress to ~64 KB; with a 1 MiB limit the inflation stops at the limit.
TEST(HttpInflate, BombStopsAtTheLimit) {
  const std::string bomb = spore::test::zlib_compress(std::string(64u << 20, '\0'), 31);
  ASSERT_LT(bomb.size(), 100000u);
  EXPECT_EQ(inflate_refusal(bomb, "gzip", 1u << 20), 413);
  EXPECT_EQ(inflate_refusal(bomb, "gzip", 64u << 20), 0);
}

TEST(HttpHostCheck, LoopbackNamesAndTheBoundPort) {
  const http::HostCheck c("127.0.0.1", 8080, {});
  for (const char* ok : {"localhost:8080", "LOCALHOST:8080", "localhost", "127.0.0.1:8080", "[::1]:8080", "localhost.:8080"})
    EXPECT_TRUE(c.host_allowed(ok)) << ok;
  for (const char* bad : {"evil.example:8080", "evil.example", "localhost:9090", "127.0.0.2:8080", "localhost.evil.example",
                          "[::1", "", "localhost:80x", "192.168.1.5:8080"})
    EXPECT_FALSE(c.host_allowed(bad)) << bad;
  EXPECT_TRUE(c.origin_allowed("http://localhost:3000"));
  EXPECT_TRUE(c.origin_allowed("http://127.0.0.1:8080"));
  EXPECT_FALSE(c.origin_allowed("http://evil.example:8080"));
  EXPECT_FALSE(c.origin_allowed("null"));
}

TEST(HttpHostCheck, AllowedHostsAndWildcards) {
  const http::HostCheck named("127.0.0.1", 8080, {"My-Box.lan", "10.0.0.7"});
  EXPECT_TRUE(named.host_allowed("my-box.lan:8080"));
  EXPECT_TRUE(named.host_allowed("10.0.0.7:8080"));
  EXPECT_TRUE(named.origin_allowed("https://MY-BOX.lan"));
  EXPECT_FALSE(named.host_allowed("other.lan:8080"));
  const http::HostCheck any("127.0.0.1", 8080, {"*"});
  EXPECT_TRUE(any.host_allowed("whatever.example:1"));
  EXPECT_TRUE(any.origin_allowed("null"));
  // Bound to every address: any IP literal is "the bound address"; names still are not.
  const http::HostCheck all("0.0.0.0", 8080, {});
  EXPECT_TRUE(all.host_allowed("192.168.1.5:8080"));
  EXPECT_TRUE(all.host_allowed("[fe80::1]:8080"));
  EXPECT_FALSE(all.host_allowed("evil.example:8080"));
  const http::HostCheck named_bind("my-host", 8080, {});
  EXPECT_TRUE(named_bind.host_allowed("MY-HOST:8080"));
}

}  // namespace
