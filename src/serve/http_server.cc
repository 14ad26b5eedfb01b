// NOTE [HTTP transport]: the event loop reads; workers answer. A connection is owned by the loop
// thread while it is idle, reading a request, writing a buffered answer or draining before
// close; it is handed to a worker (and removed from epoll) only with a complete request, and
// handed back (through `returned` and the eventfd) when the worker is done. Only the loop thread
// closes sockets, so a descriptor number is never reused while a worker or PeerSocket uses it.
#include "serve/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "serve/api_error.h"
#include "serve/http_body.h"
#include "serve/http_response.h"

namespace spore::serve {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kReadChunk = 64 * 1024;                 // bytes read per readiness event
constexpr auto kLinger = std::chrono::milliseconds(1000);      // draining after an error answer
constexpr std::size_t kLingerBytes = std::size_t{1} << 20;     // at most this much drained

std::string address_text(const sockaddr_storage& a, int& port) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (a.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
    inet_ntop(AF_INET, &v4->sin_addr, buf, sizeof buf);
    port = ntohs(v4->sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
    inet_ntop(AF_INET6, &v6->sin6_addr, buf, sizeof buf);
    port = ntohs(v6->sin6_port);
  }
  return buf;
}

}  // namespace

struct Conn {
  enum class State { kIdle, kHead, kBody, kBusy, kWrite, kDrain };
  explicit Conn(const http::Limits& limits) : scan(limits) {}
  int fd = -1;
  std::string remote_ip, local_ip;
  int remote_port = -1, local_port = -1;
  State state = State::kIdle;
  Clock::time_point deadline;
  std::string in;  // received, not yet consumed
  bool eof = false;
  http::HeadScanner scan;
  http::RequestHead head;
  std::unique_ptr<http::ChunkedDecoder> chunked;
  std::string body;
  std::string out;  // an answer the loop writes
  std::size_t out_off = 0;
  bool close_after = false;  // after `out`: close (drain first) instead of reading the next request
  bool close_now = false;    // a worker says: close at once (a stream ended early)
  std::size_t drained = 0;
};

struct HttpServer::Loop {
  HttpServer& s;
  int listen_fd = -1, epfd = -1, wake_fd = -1;
  std::atomic<bool> stopping{false}, running{false};
  std::unordered_map<int, std::unique_ptr<Conn>> conns;  // loop thread only
  Clock::time_point listen_paused_until{};
  bool listen_paused = false;

  std::mutex mu;
  std::condition_variable cv;
  std::deque<Conn*> jobs;      // complete requests for the workers
  std::deque<Conn*> returned;  // connections the workers are done with
  bool workers_stop = false;
  std::vector<std::thread> workers;

  explicit Loop(HttpServer& server) : s(server) {
    epfd = epoll_create1(EPOLL_CLOEXEC);
    wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  }
  ~Loop() {
    for (auto& [fd, c] : conns) close(fd);
    if (listen_fd >= 0) close(listen_fd);
    if (epfd >= 0) close(epfd);
    if (wake_fd >= 0) close(wake_fd);
  }

  void wake() {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(wake_fd, &one, sizeof one);
  }
  void watch(int fd, uint32_t events, int op) {
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    epoll_ctl(epfd, op, fd, &ev);
  }
  const http::Limits& limits() const { return s.options_.limits; }

  // --- the loop thread ---------------------------------------------------------------------

  void run() {
    watch(wake_fd, EPOLLIN, EPOLL_CTL_ADD);
    watch(listen_fd, EPOLLIN, EPOLL_CTL_ADD);
    std::vector<epoll_event> events(256);
    while (!stopping) {
      const int n = epoll_wait(epfd, events.data(), (int)events.size(), wait_ms());
      for (int i = 0; i < n && !stopping; ++i) {
        const int fd = events[i].data.fd;
        if (fd == wake_fd) {
          uint64_t v;
          [[maybe_unused]] ssize_t r = read(wake_fd, &v, sizeof v);
          take_returned();
        } else if (fd == listen_fd) {
          accept_all();
        } else if (auto it = conns.find(fd); it != conns.end()) {
          on_event(*it->second, events[i].events);
        }
      }
      expire();
    }
    // Requests being handled see their client gone (reads end, writes fail) and finish.
    for (auto& [fd, c] : conns)
      if (c->state == Conn::State::kBusy) shutdown(fd, SHUT_RDWR);
  }

  int wait_ms() const {
    Clock::time_point next = Clock::now() + std::chrono::seconds(1);
    for (const auto& [fd, c] : conns)
      if (c->state != Conn::State::kBusy && c->deadline < next) next = c->deadline;
    if (listen_paused && listen_paused_until < next) next = listen_paused_until;
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count();
    return (int)std::max<long long>(ms + 1, 0);
  }

  void accept_all() {
    while (true) {
      sockaddr_storage peer{};
      socklen_t len = sizeof peer;
      const int fd = accept4(listen_fd, (sockaddr*)&peer, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
          // Out of descriptors (EMFILE) and the like: stop accepting for a moment rather than spin.
          watch(listen_fd, 0, EPOLL_CTL_MOD);
          listen_paused = true;
          listen_paused_until = Clock::now() + std::chrono::milliseconds(100);
        }
        return;
      }
      if (conns.size() >= s.options_.max_connections && !evict_one()) {
        refuse_busy(fd);
        continue;
      }
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // SSE events leave at once
      auto c = std::make_unique<Conn>(limits());
      c->fd = fd;
      c->remote_ip = address_text(peer, c->remote_port);
      sockaddr_storage local{};
      len = sizeof local;
      if (getsockname(fd, (sockaddr*)&local, &len) == 0) c->local_ip = address_text(local, c->local_port);
      c->deadline = Clock::now() + s.options_.idle_timeout;
      watch(fd, EPOLLIN | EPOLLRDHUP, EPOLL_CTL_ADD);
      conns.emplace(fd, std::move(c));
    }
  }

  // At the cap, a connection that has no request under way (idle, or still sending its head)
  // gives way to the new one: the one nearest its deadline, which would be closed soonest anyway.
  // So idle or slow sockets cannot keep new clients out; only connections whose requests are
  // being answered or written count against the cap for good.
  bool evict_one() {
    Conn* victim = nullptr;
    for (const auto& [fd, c] : conns)
      if ((c->state == Conn::State::kIdle || c->state == Conn::State::kHead || c->state == Conn::State::kDrain) &&
          (!victim || c->deadline < victim->deadline))
        victim = c.get();
    if (!victim) return false;
    close_conn(*victim);
    return true;
  }

  // Over the connection cap with nothing to evict: one 503 written without waiting, then closed.
  void refuse_busy(int fd) {
    const std::string a = http::serialize_error(
        ApiError(503, "The server has too many open connections (" + std::to_string(s.options_.max_connections) +
                          "); retry shortly",
                 "server_error", "", "too_many_connections"),
        /*retry_after=*/true);
    [[maybe_unused]] ssize_t n = send(fd, a.data(), a.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    shutdown(fd, SHUT_WR);
    close(fd);
    log_transport_error(nullptr, 503);
  }

  void close_conn(Conn& c) {
    const int fd = c.fd;
    epoll_ctl(epfd, EPOLL_CTL_DEL, fd, nullptr);
    conns.erase(fd);  // destroys c
    close(fd);
  }

  void on_event(Conn& c, uint32_t ev) {
    if (c.state == Conn::State::kWrite) {
      if (ev & (EPOLLERR | EPOLLHUP)) return close_conn(c);
      return write_some(c);
    }
    // Reading states (idle, head, body, drain).
    char buf[kReadChunk];
    const ssize_t n = recv(c.fd, buf, sizeof buf, 0);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
      return close_conn(c);
    }
    if (n == 0) c.eof = true;
    if (c.state == Conn::State::kDrain) {
      c.drained += (std::size_t)n;
      if (n == 0 || c.drained > kLingerBytes) close_conn(c);
      return;
    }
    c.in.append(buf, (std::size_t)n);
    const int fd = c.fd;
    process(c);
    auto it = conns.find(fd);
    if (it == conns.end()) return;
    Conn& after = *it->second;
    // A client that ended its side with no request under way is done; one whose request is being
    // answered is seen by the worker (PeerSocket) or when its connection comes back.
    if (after.eof && (after.state == Conn::State::kIdle || after.state == Conn::State::kHead ||
                      after.state == Conn::State::kBody))
      close_conn(after);
  }

  // Moves a connection's buffered bytes through head, body and dispatch; may close it.
  void process(Conn& c) {
    try {
      while (true) {
        if (c.state == Conn::State::kIdle) {
          if (c.in.empty()) return;
          c.state = Conn::State::kHead;
          c.head = http::RequestHead();
          c.deadline = Clock::now() + s.options_.head_timeout;  // from the first byte of the head
        }
        if (c.state == Conn::State::kHead) {
          const std::size_t n = c.scan.feed(c.in);
          if (n == 0) return;
          c.head = http::parse_head(std::string_view(c.in).substr(0, n), limits());
          c.in.erase(0, n);
          c.scan.reset();
          c.body.clear();
          c.chunked.reset();
          if (c.head.framing == http::BodyFraming::kNone) return dispatch(c);
          if (c.head.framing == http::BodyFraming::kLength && c.head.content_length == 0) return dispatch(c);
          if (c.head.framing == http::BodyFraming::kChunked)
            c.chunked = std::make_unique<http::ChunkedDecoder>(limits().max_body_bytes);
          c.state = Conn::State::kBody;
          c.deadline = Clock::now() + s.options_.body_timeout;
          if (c.head.expect_continue) {
            static const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
            [[maybe_unused]] ssize_t w = send(c.fd, kContinue, sizeof kContinue - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
          }
        }
        if (c.state == Conn::State::kBody) {
          if (c.chunked) {
            const std::size_t used = c.chunked->feed(c.in, c.body);
            c.in.erase(0, used);
            if (!c.chunked->done()) return;
          } else {
            const std::size_t want = (std::size_t)c.head.content_length - c.body.size();
            const std::size_t n = std::min(want, c.in.size());
            c.body.append(c.in, 0, n);
            c.in.erase(0, n);
            if (c.body.size() < c.head.content_length) return;
          }
          return dispatch(c);
        }
        return;
      }
    } catch (const ApiError& e) {
      fail(c, e);
    }
  }

  void dispatch(Conn& c) {
    c.state = Conn::State::kBusy;
    epoll_ctl(epfd, EPOLL_CTL_DEL, c.fd, nullptr);
    {
      std::lock_guard<std::mutex> lock(mu);
      jobs.push_back(&c);
    }
    cv.notify_one();
  }

  // A request the transport refuses: its error object, then close (after draining, so the
  // client reads the answer instead of a reset).
  void fail(Conn& c, const ApiError& e) {
    log_transport_error(c.head.method.empty() ? nullptr : &c.head, e.status);
    c.out = http::serialize_error(e);
    c.out_off = 0;
    c.close_after = true;
    start_write(c);
  }

  void log_transport_error(const http::RequestHead* head, int status) {
    if (!s.logger_) return;
    httplib::Request req;
    if (head) {
      req.method = head->method;
      req.path = head->path;
    }
    httplib::Response res;
    res.status = status;
    s.logger_(req, res);
  }

  void start_write(Conn& c) {
    c.state = Conn::State::kWrite;
    c.deadline = Clock::now() + s.options_.write_timeout;
    watch(c.fd, EPOLLOUT, EPOLL_CTL_MOD);
    write_some(c);
  }

  void write_some(Conn& c) {
    while (c.out_off < c.out.size()) {
      const ssize_t n = send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        c.out_off += (std::size_t)n;
        c.deadline = Clock::now() + s.options_.write_timeout;
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
      return close_conn(c);
    }
    c.out.clear();
    c.out_off = 0;
    if (c.close_after) {
      shutdown(c.fd, SHUT_WR);
      c.state = Conn::State::kDrain;
      c.deadline = Clock::now() + kLinger;
      watch(c.fd, EPOLLIN | EPOLLRDHUP, EPOLL_CTL_MOD);
      return;
    }
    next_request(c);
  }

  void next_request(Conn& c) {
    c.state = Conn::State::kIdle;
    c.deadline = Clock::now() + s.options_.idle_timeout;
    watch(c.fd, EPOLLIN | EPOLLRDHUP, EPOLL_CTL_MOD);
    const int fd = c.fd;
    process(c);  // a pipelined request may already be here
    auto it = conns.find(fd);
    if (it != conns.end() && it->second->eof && it->second->state == Conn::State::kIdle) close_conn(*it->second);
  }

  void take_returned() {
    std::deque<Conn*> back;
    {
      std::lock_guard<std::mutex> lock(mu);
      back.swap(returned);
    }
    for (Conn* c : back) {
      if (c->close_now || stopping) {
        close_conn(*c);
        continue;
      }
      watch(c->fd, EPOLLIN | EPOLLRDHUP, EPOLL_CTL_ADD);
      if (!c->out.empty()) start_write(*c);
      else next_request(*c);
    }
  }

  void expire() {
    const auto now = Clock::now();
    if (listen_paused && now >= listen_paused_until) {
      listen_paused = false;
      watch(listen_fd, EPOLLIN, EPOLL_CTL_MOD);
    }
    std::vector<int> late;
    for (const auto& [fd, c] : conns)
      if (c->state != Conn::State::kBusy && c->deadline <= now) late.push_back(fd);
    for (int fd : late) {
      Conn& c = *conns.at(fd);
      if (c.state == Conn::State::kHead || c.state == Conn::State::kBody) {
        fail(c, ApiError(408,
                         std::string("The request ") + (c.state == Conn::State::kHead ? "head" : "body") +
                             " did not arrive in time; send it whole without pausing",
                         "invalid_request_error", "", "request_timeout"));
        // fail() wrote what it could; a client that reads nothing is not waited for again.
        if (auto it = conns.find(fd); it != conns.end() && it->second->state == Conn::State::kWrite) close_conn(*it->second);
      } else {
        close_conn(c);  // idle, a stalled write, or draining done
      }
    }
  }

  // --- worker threads ----------------------------------------------------------------------

  void worker() {
    while (true) {
      Conn* c = nullptr;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return workers_stop || !jobs.empty(); });
        if (workers_stop) return;
        c = jobs.front();
        jobs.pop_front();
      }
      answer(*c);
      {
        std::lock_guard<std::mutex> lock(mu);
        returned.push_back(c);
      }
      wake();
    }
  }

  void answer(Conn& c) {
    httplib::Request req;
    req.method = c.head.method;
    req.path = c.head.path;
    req.target = c.head.target;
    req.version = "HTTP/1." + std::to_string(c.head.minor_version);
    for (const auto& [k, v] : c.head.headers) req.headers.emplace(k, v);
    // RFC 9112 3.2.2: an absolute-form target's authority replaces Host.
    if (!c.head.authority.empty() && req.get_header_value("Host") != c.head.authority) {
      req.headers.erase("Host");
      req.headers.emplace("Host", c.head.authority);
    }
    req.remote_addr = c.remote_ip;
    req.remote_port = c.remote_port;
    req.local_addr = c.local_ip;
    req.local_port = c.local_port;
    httplib::Response res;
    try {
      req.body = c.head.content_encoding.empty()
                     ? std::move(c.body)
                     : http::inflate_body(c.body, c.head.content_encoding, limits().max_body_bytes);
    } catch (const ApiError& e) {
      http::fill_error(res, e);
    }
    c.body.clear();
    c.body.shrink_to_fit();
    if (res.status == -1) route(req, res);
    if (res.status == -1) res.status = 200;
    if (res.status >= 400 && res.body.empty() && !res.content_provider_ && s.error_handler_) s.error_handler_(req, res);
    const bool keep = c.head.keep_alive && !stopping;
    if (!res.content_provider_) {
      if (s.logger_) s.logger_(req, res);
      c.out = http::serialize(res, keep, c.head.method == "HEAD");
      c.out_off = 0;
      c.close_after = !keep;
      return;
    }
    const bool complete = http::stream(c.fd, res, c.head.minor_version, keep, s.options_.write_timeout, stopping);
    if (s.logger_) s.logger_(req, res);
    c.close_now = !complete || !keep || c.head.minor_version == 0;
  }

  void route(const httplib::Request& req, httplib::Response& res) {
    try {
      if (s.pre_routing_ && s.pre_routing_(req, res) == HandlerResponse::Handled) return;
      auto it = s.routes_.find({req.method, req.path});
      if (it == s.routes_.end()) {
        res.status = 404;
        return;
      }
      it->second(req, res);
    } catch (const std::exception& e) {
      http::fill_error(res, ApiError(500, std::string("internal error: ") + e.what(), "server_error"));
    }
  }
};

HttpServer::HttpServer(HttpOptions options) : options_(std::move(options)), loop_(std::make_unique<Loop>(*this)) {}

HttpServer::~HttpServer() { stop(); }

int HttpServer::bind(const std::string& host, int port) {
  if (loop_->listen_fd >= 0) return -1;
  // Room for the connection cap: raise the soft descriptor limit to the hard one, and keep the
  // cap below what the process may open.
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    if (rl.rlim_cur < rl.rlim_max) {
      rl.rlim_cur = rl.rlim_max;
      setrlimit(RLIMIT_NOFILE, &rl);
      getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur > 128)
      options_.max_connections = std::min<std::size_t>(options_.max_connections, (std::size_t)rl.rlim_cur - 96);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0) return -1;
  int fd = -1;
  for (addrinfo* a = res; a; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 1024) == 0) break;
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0) return -1;
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  getsockname(fd, (sockaddr*)&addr, &len);
  int bound = -1;
  address_text(addr, bound);
  loop_->listen_fd = fd;
  return bound;
}

void HttpServer::listen_after_bind() {
  Loop& l = *loop_;
  if (l.listen_fd < 0) return;
  l.running = true;
  for (std::size_t i = 0; i < std::max<std::size_t>(options_.threads, 1); ++i) l.workers.emplace_back([&l] { l.worker(); });
  l.run();
  {
    std::lock_guard<std::mutex> lock(l.mu);
    l.workers_stop = true;
  }
  l.cv.notify_all();
  for (auto& t : l.workers) t.join();
  l.workers.clear();
  for (auto& [fd, c] : l.conns) close(fd);
  l.conns.clear();
  close(l.listen_fd);
  l.listen_fd = -1;
  l.running = false;
}

void HttpServer::stop() {
  if (!loop_) return;
  loop_->stopping = true;
  loop_->wake();
}

bool HttpServer::is_running() const { return loop_ && loop_->running; }

}  // namespace spore::serve
