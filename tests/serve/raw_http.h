// Raw HTTP/1.1 over loopback sockets for the server tests: the bytes as a curl user (or an
// attacker) would send them, no client library smoothing anything over.
#pragma once
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>

namespace spore::test {

// A connected socket to 127.0.0.1:port (-1 when refused); reads time out after `timeout_s`.
inline int connect_to(int port, int timeout_s = 60) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (sockaddr*)&a, sizeof a) != 0) {
    close(fd);
    return -1;
  }
  timeval tv{timeout_s, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

// Sends everything; false when the peer stopped taking bytes (closed or reset).
inline bool send_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += (size_t)n;
  }
  return true;
}

// Everything until the peer closes (or the read timeout).
inline std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, (size_t)n);
  return out;
}

// One answer with a Content-Length body from a connection that stays open (keep-alive): the
// raw head and body; an empty head when the connection closed or timed out first.
struct RawAnswer {
  int status = 0;
  std::string head, body;
};
inline RawAnswer read_answer(int fd, std::string& pending) {
  RawAnswer a;
  char buf[4096];
  size_t head_end;
  while ((head_end = pending.find("\r\n\r\n")) == std::string::npos) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return a;
    pending.append(buf, (size_t)n);
  }
  a.head = pending.substr(0, head_end);
  size_t length = 0;
  for (const char* name : {"\r\nContent-Length: ", "\r\ncontent-length: "})
    if (size_t p = a.head.find(name); p != std::string::npos) length = std::stoul(a.head.substr(p + 18));
  while (pending.size() < head_end + 4 + length) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    pending.append(buf, (size_t)n);
  }
  a.body = pending.substr(head_end + 4, length);
  pending.erase(0, head_end + 4 + length);
  if (a.head.rfind("HTTP/1.", 0) == 0 && a.head.size() > 12) a.status = std::stoi(a.head.substr(9, 3));
  return a;
}
inline RawAnswer read_answer(int fd) {
  std::string pending;
  return read_answer(fd, pending);
}

// The status of a raw answer ("HTTP/1.1 200 OK ..."); 0 when there is none.
inline int status_of(const std::string& raw) {
  return raw.rfind("HTTP/1.", 0) == 0 && raw.size() > 12 ? std::stoi(raw.substr(9, 3)) : 0;
}

// Polls GET /health until it answers 200 (true) or `seconds` pass.
inline bool wait_until_healthy(int port, int seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < end) {
    const int fd = connect_to(port, 5);
    if (fd >= 0) {
      send_all(fd, "GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
      const int status = status_of(read_all(fd));
      close(fd);
      if (status == 200) return true;
    }
    usleep(100 * 1000);
  }
  return false;
}

// Whether the peer closed the connection within `ms` (any bytes before the close are skipped).
inline bool closed_within(int fd, int ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  char buf[4096];
  while (std::chrono::steady_clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    const int left = (int)std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now()).count();
    if (poll(&p, 1, left > 0 ? left : 0) <= 0) continue;
    const ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) return true;
  }
  return false;
}

}  // namespace spore::test
