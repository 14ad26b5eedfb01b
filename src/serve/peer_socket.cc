#include "serve/peer_socket.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <string>

namespace spore::serve {

namespace {

// Address and port of a socket end, as httplib writes them into Request (inet_ntop's text).
bool address_of(const sockaddr_storage& a, std::string& ip, int& port) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (a.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
    if (!inet_ntop(AF_INET, &v4->sin_addr, buf, sizeof buf)) return false;
    port = ntohs(v4->sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
    if (!inet_ntop(AF_INET6, &v6->sin6_addr, buf, sizeof buf)) return false;
    port = ntohs(v6->sin6_port);
  } else {
    return false;
  }
  ip = buf;
  return true;
}

}  // namespace

int PeerSocket::find(const httplib::Request& req) {
  if (req.remote_port <= 0 || req.local_port <= 0) return -1;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return -1;
  int found = -1;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    struct stat st;
    if (fstat((int)fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_storage local{}, peer{};
    socklen_t ln = sizeof local, pn = sizeof peer;
    if (getsockname((int)fd, (sockaddr*)&local, &ln) != 0 || getpeername((int)fd, (sockaddr*)&peer, &pn) != 0) continue;
    std::string lip, pip;
    int lport = 0, pport = 0;
    if (!address_of(local, lip, lport) || !address_of(peer, pip, pport)) continue;
    if (lport == req.local_port && pport == req.remote_port && pip == req.remote_addr) {
      found = (int)fd;
      break;
    }
  }
  closedir(dir);
  return found;
}

bool PeerSocket::closed(int fd) {
  pollfd p{fd, (short)(POLLIN | POLLRDHUP), 0};
  if (poll(&p, 1, 0) <= 0) return false;  // nothing happened on the connection
  if (p.revents & (POLLERR | POLLHUP | POLLRDHUP | POLLNVAL)) return true;
  if (!(p.revents & POLLIN)) return false;
  char c;
  const ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return false;  // the client sent more (its next request): still there
  if (n == 0) return true;  // orderly close
  return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;  // ECONNRESET and the like
}

}  // namespace spore::serve
