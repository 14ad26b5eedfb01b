#include "serve/http_response.h"

#include <poll.h>
#include <strings.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>

namespace spore::serve::http {

namespace {

using Clock = std::chrono::steady_clock;

const char* reason(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 421: return "Misdirected Request";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 499: return "Client Closed Request";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return status < 400 ? "OK" : status < 500 ? "Client Error" : "Server Error";
  }
}

// The handler's own headers; the framing ones are the transport's to write. A value with CR or
// LF is dropped (never a second header or a split answer).
std::string head_lines(const httplib::Response& res) {
  std::string out = "HTTP/1.1 " + std::to_string(res.status) + " " + reason(res.status) + "\r\n";
  for (const auto& [k, v] : res.headers) {
    if (strcasecmp(k.c_str(), "Content-Length") == 0 || strcasecmp(k.c_str(), "Connection") == 0 ||
        strcasecmp(k.c_str(), "Transfer-Encoding") == 0 || k.find_first_of("\r\n:") != std::string::npos ||
        v.find_first_of("\r\n") != std::string::npos)
      continue;
    out += k + ": " + v + "\r\n";
  }
  return out;
}

// Writes all of [p, p + n) to a non-blocking socket; false when it fails or makes no progress for
// `timeout`.
bool write_all(int fd, const char* p, std::size_t n, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (n > 0) {
    const ssize_t w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      p += w;
      n -= (std::size_t)w;
      deadline = Clock::now() + timeout;
      continue;
    }
    if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd pf{fd, POLLOUT, 0};
    if (poll(&pf, 1, (int)left) < 0 && errno != EINTR) return false;
    if (pf.revents & (POLLERR | POLLHUP | POLLNVAL)) return false;
  }
  return true;
}

}  // namespace

std::string serialize(const httplib::Response& res, bool keep_alive, bool head_only) {
  std::string out = head_lines(res);
  out += "Content-Length: " + std::to_string(res.body.size()) + "\r\n";
  out += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  if (!head_only) out += res.body;
  return out;
}

void fill_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(e.to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json");
}

std::string serialize_error(const ApiError& e, bool retry_after) {
  httplib::Response res;
  fill_error(res, e);
  if (retry_after) res.set_header("Retry-After", "1");
  return serialize(res, /*keep_alive=*/false);
}

bool stream(int fd, httplib::Response& res, int minor_version, bool keep_alive, std::chrono::milliseconds write_timeout,
            const std::atomic<bool>& stopping) {
  const bool chunked = minor_version >= 1;
  std::string head = head_lines(res);
  head += chunked ? "Transfer-Encoding: chunked\r\n" : "";
  head += chunked && keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  bool ok = write_all(fd, head.data(), head.size(), write_timeout);
  bool done = false;
  std::size_t offset = 0;
  httplib::DataSink sink;
  sink.write = [&](const char* d, std::size_t n) {
    if (!ok || done || stopping) return ok = false;
    if (n == 0) return true;
    if (chunked) {
      char size[32];
      const int len = std::snprintf(size, sizeof size, "%zx\r\n", n);
      ok = write_all(fd, size, (std::size_t)len, write_timeout) && write_all(fd, d, n, write_timeout) &&
           write_all(fd, "\r\n", 2, write_timeout);
    } else {
      ok = write_all(fd, d, n, write_timeout);
    }
    offset += n;
    return ok;
  };
  sink.done = [&] {
    if (!ok || done) return;
    done = true;
    if (chunked) ok = write_all(fd, "0\r\n\r\n", 5, write_timeout);
  };
  sink.is_writable = [&] { return ok && !stopping; };
  while (ok && !done) {
    if (stopping || !res.content_provider_(offset, 0, sink)) ok = false;
  }
  res.content_provider_success_ = ok && done;
  return ok && done;
}

}  // namespace spore::serve::http
