// Spore's HTTP/1.1 server (NOTE [HTTP transport]): one event-loop thread (epoll) accepts
// connections and reads request heads and bodies with per-connection deadlines; only complete,
// validated requests reach the worker threads, which run the route handler and write the answer.
// A slow or idle client therefore holds a socket, never a worker. The route handlers keep
// cpp-httplib's Request/Response/DataSink types (plain structs here), so the routes of server.cc
// and completions.cc read as before; httplib's server loop is no longer used.
#pragma once
#include <httplib.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "serve/http_request_head.h"

namespace spore::serve {

struct HttpOptions {
  std::size_t threads = 8;           // workers: requests handled at once (a stream holds one)
  http::Limits limits;
  std::size_t max_connections = 1024;  // open sockets; one more is answered 503 and closed
  std::chrono::milliseconds idle_timeout{10000};  // no byte of a next request (or a first one)
  std::chrono::milliseconds head_timeout{10000};  // the whole head, from its first byte
  std::chrono::milliseconds body_timeout{30000};  // the whole body, from the end of the head
  std::chrono::milliseconds write_timeout{10000};  // no progress writing an answer
};

class HttpServer {
 public:
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;
  enum class HandlerResponse { Handled, Unhandled };
  // Runs before routing (authentication, host check); Handled means it filled the answer.
  using PreRouting = std::function<HandlerResponse(const httplib::Request&, httplib::Response&)>;
  // Gives an error status whose body is empty its error object (no route, a transport error).
  using ErrorHandler = std::function<void(const httplib::Request&, httplib::Response&)>;
  // Sees every answered request (metrics).
  using Logger = std::function<void(const httplib::Request&, const httplib::Response&)>;

  explicit HttpServer(HttpOptions options = {});
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  void Get(const std::string& path, Handler h) { routes_[{"GET", path}] = std::move(h); }
  void Post(const std::string& path, Handler h) { routes_[{"POST", path}] = std::move(h); }
  void set_pre_routing_handler(PreRouting h) { pre_routing_ = std::move(h); }
  void set_error_handler(ErrorHandler h) { error_handler_ = std::move(h); }
  void set_logger(Logger h) { logger_ = std::move(h); }

  // Listens on host:port (0: any free port); returns the port, -1 when it cannot.
  int bind(const std::string& host, int port);
  // Serves until stop(); returns once every worker has finished its request.
  void listen_after_bind();
  // From any thread, before or during listen_after_bind(): closes the listening socket and every
  // connection (a request being handled sees its client gone and ends).
  void stop();
  bool is_running() const;
  const HttpOptions& options() const { return options_; }
  void set_options(HttpOptions o) { options_ = std::move(o); }  // before bind()

  struct Loop;  // the event loop and workers (http_server.cc)

 private:
  friend struct Loop;
  HttpOptions options_;
  std::map<std::pair<std::string, std::string>, Handler> routes_;
  PreRouting pre_routing_;
  ErrorHandler error_handler_;
  Logger logger_;
  std::unique_ptr<Loop> loop_;
};

}  // namespace spore::serve
