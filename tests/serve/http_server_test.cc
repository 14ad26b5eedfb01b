// Spore's HTTP server on its own (NOTE [HTTP transport]), in this process on a free loopback port
// with a few small routes and short deadlines, spoken to over raw sockets: slow and idle clients
// hold no worker, deadlines close them, the connection cap answers 503, keep-alive and pipelining
// answer in order, request bodies arrive decoded (chunked, gzip) under the one limit, and a
// streamed answer arrives as HTTP chunks. No model is needed.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "serve/zlib_compress.h"
#include "serve/http_server.h"
#include "serve/raw_http.h"

namespace {

using namespace spore::test;
using spore::serve::HttpOptions;
using spore::serve::HttpServer;
using Clock = std::chrono::steady_clock;

class HttpServerTest : public ::testing::Test {
 protected:
  void start(HttpOptions o) {
    server = std::make_unique<HttpServer>(o);
    server->Get("/health", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok", "text/plain"); });
    server->Post("/echo", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content(req.body, "application/octet-stream");
    });
    server->Get("/wait", [this](const httplib::Request&, httplib::Response& res) {
      ++waiting;
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      res.set_content("done", "text/plain");
    });
    server->Get("/throw", [](const httplib::Request&, httplib::Response&) { throw std::runtime_error("boom"); });
    server->Get("/stream", [](const httplib::Request&, httplib::Response& res) {
      auto n = std::make_shared<int>(0);
      res.set_chunked_content_provider("text/event-stream", [n](size_t, httplib::DataSink& sink) {
        const std::string ev = "data: " + std::to_string((*n)++) + "\n\n";
        sink.write(ev.data(), ev.size());
        if (*n == 3) sink.done();
        return true;
      });
    });
    port = server->bind("127.0.0.1", 0);
    ASSERT_GT(port, 0);
    thread = std::thread([this] { server->listen_after_bind(); });
  }
  void TearDown() override {
    if (!server) return;
    release = true;
    server->stop();
    thread.join();
  }
  static HttpOptions quick() {
    HttpOptions o;
    o.threads = 2;
    o.limits.max_body_bytes = 1000;
    o.idle_timeout = std::chrono::milliseconds(400);
    o.head_timeout = std::chrono::milliseconds(400);
    o.body_timeout = std::chrono::milliseconds(400);
    return o;
  }
  RawAnswer get(const std::string& path) {
    int fd = connect_to(port, 10);
    send_all(fd, "GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n");
    RawAnswer a = read_answer(fd);
    close(fd);
    return a;
  }

  std::unique_ptr<HttpServer> server;
  std::atomic<int> waiting{0};  // /wait handlers running
  std::atomic<bool> release{false};
  std::thread thread;
  int port = 0;
};

// With two workers, 40 clients trickling a head and 40 idle ones hold none of them.
TEST_F(HttpServerTest, SlowAndIdleClientsHoldNoWorker) {
  HttpOptions o = quick();
  o.head_timeout = o.idle_timeout = std::chrono::seconds(30);
  start(o);
  std::vector<int> idle, slow;
  for (int i = 0; i < 40; ++i) {
    idle.push_back(connect_to(port));
    slow.push_back(connect_to(port));
    send_all(slow.back(), "GET /health HTTP/1.1\r\nHo");
  }
  for (int round = 0; round < 3; ++round) {
    for (int fd : slow) send_all(fd, "s");
    const auto t0 = Clock::now();
    const RawAnswer a = get("/health");
    EXPECT_EQ(a.status, 200);
    EXPECT_EQ(a.body, "ok");
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));
  }
  for (int fd : idle) close(fd);
  for (int fd : slow) close(fd);
}

// A head trickled past its deadline is answered 408 and closed; an idle socket is closed.
TEST_F(HttpServerTest, DeadlinesCloseSlowAndIdleConnections) {
  start(quick());
  const int idle = connect_to(port, 10);
  const int slow = connect_to(port, 10);
  const auto t0 = Clock::now();
  // A byte every 40 ms (the head would take 1.6 s), until the server answers.
  for (char c : std::string("GET /health HTTP/1.1\r\nHost: localhost\r\n")) {
    pollfd p{slow, POLLIN, 0};
    if (poll(&p, 1, 0) > 0 || !send_all(slow, std::string(1, c))) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    if (Clock::now() - t0 > std::chrono::seconds(3)) break;
  }
  const std::string raw = read_all(slow);
  EXPECT_EQ(status_of(raw), 408) << raw;
  EXPECT_NE(raw.find("request_timeout"), std::string::npos) << raw;
  EXPECT_TRUE(closed_within(idle, 5000));
  close(idle);
  close(slow);
}

// At the cap an idle connection gives way to a new one; when every connection has a request
// being answered, the new one gets 503.
TEST_F(HttpServerTest, ConnectionCapEvictsIdleThenAnswers503) {
  HttpOptions o = quick();
  o.idle_timeout = std::chrono::seconds(30);
  o.max_connections = 4;
  o.threads = 4;
  start(o);
  std::vector<int> held;
  for (int i = 0; i < 4; ++i) held.push_back(connect_to(port, 10));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // accepted before the next
  EXPECT_EQ(get("/health").status, 200);                          // an idle one made room
  int closed = 0;
  for (int fd : held) closed += closed_within(fd, 500) ? 1 : 0;
  EXPECT_GE(closed, 1);
  for (int fd : held) close(fd);
  held.clear();
  // Four requests being answered (each waits for `release`), then a fifth connection.
  for (int i = 0; i < 4; ++i) {
    held.push_back(connect_to(port, 10));
    send_all(held.back(), "GET /wait HTTP/1.1\r\nHost: localhost\r\n\r\n");
  }
  for (int i = 0; i < 500 && waiting < 4; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(waiting, 4);
  const int fifth = connect_to(port, 10);
  const std::string raw = read_all(fifth);
  EXPECT_EQ(status_of(raw), 503) << raw;
  EXPECT_NE(raw.find("too_many_connections"), std::string::npos) << raw;
  close(fifth);
  release = true;
  for (int fd : held) {
    EXPECT_EQ(read_answer(fd).status, 200);
    close(fd);
  }
}

TEST_F(HttpServerTest, KeepAliveAndPipelinedRequestsAnswerInOrder) {
  start(quick());
  const int fd = connect_to(port, 10);
  send_all(fd,
           "POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\n\r\nabc"
           "POST /echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nde\r\n1\r\nf\r\n0\r\n\r\n"
           "GET /nothing HTTP/1.1\r\nHost: localhost\r\n\r\n");
  std::string pending;
  const RawAnswer a = read_answer(fd, pending), b = read_answer(fd, pending), c = read_answer(fd, pending);
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.body, "abc");
  EXPECT_EQ(b.status, 200);
  EXPECT_EQ(b.body, "def");
  EXPECT_EQ(c.status, 404);
  close(fd);
}

// A chunked body over the limit is refused when its size line arrives; the rest is never read.
TEST_F(HttpServerTest, ChunkedBodyOverTheLimitIs413) {
  start(quick());
  const int fd = connect_to(port, 10);
  send_all(fd, "POST /echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n400\r\n");  // 1024 > 1000
  const std::string raw = read_all(fd);
  EXPECT_EQ(status_of(raw), 413) << raw;
  EXPECT_NE(raw.find("body_too_large"), std::string::npos) << raw;
  close(fd);
}


TEST_F(HttpServerTest, GzipBodiesAreInflatedUnderTheLimit) {
  start(quick());
  for (const auto& [text, want] : {std::pair<std::string, int>{"hello, inflated", 200}, {std::string(5000, 'x'), 413}}) {
    const std::string gz = spore::test::zlib_compress(text, 31, 9);
    ASSERT_LT(gz.size(), 1000u);  // under the limit as sent
    const int fd = connect_to(port, 10);
    send_all(fd, "POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Encoding: gzip\r\nContent-Length: " +
                     std::to_string(gz.size()) + "\r\n\r\n" + gz);
    const RawAnswer a = read_answer(fd);
    EXPECT_EQ(a.status, want) << a.body;
    if (want == 200) {
      EXPECT_EQ(a.body, text);
    }
    close(fd);
  }
}

TEST_F(HttpServerTest, StreamedAnswersAreChunked) {
  start(quick());
  int fd = connect_to(port, 10);
  send_all(fd, "GET /stream HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
  std::string raw = read_all(fd);
  close(fd);
  EXPECT_EQ(status_of(raw), 200);
  EXPECT_NE(raw.find("Transfer-Encoding: chunked\r\n"), std::string::npos) << raw;
  EXPECT_NE(raw.find("\r\n\r\n9\r\ndata: 0\n\n\r\n9\r\ndata: 1\n\n\r\n9\r\ndata: 2\n\n\r\n0\r\n\r\n"), std::string::npos) << raw;
  // HTTP/1.0 has no chunks: the raw events, then the close.
  fd = connect_to(port, 10);
  send_all(fd, "GET /stream HTTP/1.0\r\n\r\n");
  raw = read_all(fd);
  close(fd);
  EXPECT_EQ(raw.substr(raw.find("\r\n\r\n") + 4), "data: 0\n\ndata: 1\n\ndata: 2\n\n");
}

TEST_F(HttpServerTest, TransportErrorsCarryErrorObjects) {
  start(quick());
  for (const auto& [req, status] : std::vector<std::pair<std::string, int>>{
           {"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400},
           {"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 2000\r\n\r\n", 413},
           {"GET /health HTTP/3.0\r\nHost: a\r\n\r\n", 505},
           {"GET /throw HTTP/1.1\r\nHost: a\r\n\r\n", 500}}) {
    const int fd = connect_to(port, 10);
    send_all(fd, req);
    const RawAnswer a = read_answer(fd);
    EXPECT_EQ(a.status, status) << req;
    EXPECT_NE(a.body.find("\"error\""), std::string::npos) << a.body;
    close(fd);
  }
}

// stop() while a stream and idle connections are open: listen_after_bind returns.
TEST_F(HttpServerTest, StopEndsServing) {
  start(quick());
  const int fd = connect_to(port, 10);
  EXPECT_EQ(get("/health").status, 200);
  server->stop();
  thread.join();
  server.reset();
  EXPECT_TRUE(closed_within(fd, 2000));
  close(fd);
}

}  // namespace
