#include "serve/http_host_check.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>

namespace spore::serve::http {

namespace {

// Lower-case, one trailing dot dropped, IPv6 literals in canonical text inside brackets; "" when
// the text is not a host at all.
std::string normalize(std::string_view host) {
  std::string h(host);
  std::transform(h.begin(), h.end(), h.begin(), [](unsigned char c) { return (char)std::tolower(c); });
  std::string inner = h;
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') inner = h.substr(1, h.size() - 2);
  in6_addr a6;
  if (inet_pton(AF_INET6, inner.c_str(), &a6) == 1) {
    char buf[INET6_ADDRSTRLEN];
    inet_ntop(AF_INET6, &a6, buf, sizeof buf);
    std::string out(1, '[');
    out += buf;
    out += ']';
    return out;
  }
  if (h.front() == '[') return "";
  if (!h.empty() && h.back() == '.') h.pop_back();
  if (h.empty()) return "";
  for (unsigned char c : h)
    if (!(std::isalnum(c) || c == '-' || c == '.' || c == '_')) return "";
  return h;
}

bool is_ip_literal(const std::string& normalized) {
  in_addr a4;
  return (!normalized.empty() && normalized.front() == '[') || inet_pton(AF_INET, normalized.c_str(), &a4) == 1;
}

// host[:port] -> host and port text ("" when none). False when malformed.
bool split_authority(std::string_view authority, std::string_view& host, std::string_view& port) {
  if (authority.empty()) return false;
  size_t host_end;
  if (authority.front() == '[') {
    host_end = authority.find(']');
    if (host_end == std::string_view::npos) return false;
    ++host_end;
  } else {
    host_end = authority.find(':');
    if (host_end == std::string_view::npos) host_end = authority.size();
  }
  host = authority.substr(0, host_end);
  std::string_view rest = authority.substr(host_end);
  if (rest.empty()) {
    port = {};
    return true;
  }
  if (rest.front() != ':') return false;
  port = rest.substr(1);
  return std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }) && port.size() <= 5;
}

}  // namespace

HostCheck::HostCheck(std::string bound_host, int port, const std::vector<std::string>& allowed) : port_(port) {
  names_ = {"localhost", "127.0.0.1", "[::1]"};
  const std::string bound = normalize(bound_host);
  if (bound == "0.0.0.0" || bound == "[::]") any_ip_ = true;
  else if (!bound.empty()) names_.push_back(bound);
  for (const std::string& a : allowed) {
    if (a == "*") any_ = true;
    const std::string n = normalize(a);
    if (!n.empty()) names_.push_back(n);
  }
}

bool HostCheck::name_allowed(std::string host) const {
  if (any_) return true;
  if (host.empty()) return false;
  if (any_ip_ && is_ip_literal(host)) return true;
  return std::find(names_.begin(), names_.end(), host) != names_.end();
}

bool HostCheck::host_allowed(std::string_view authority) const {
  std::string_view host, port;
  if (!split_authority(authority, host, port)) return any_;
  if (!port.empty() && std::stoi(std::string(port)) != port_ && !any_) return false;
  return name_allowed(normalize(host));
}

bool HostCheck::origin_allowed(std::string_view origin) const {
  const size_t scheme_end = origin.find("://");
  if (scheme_end == std::string_view::npos) return any_;  // "null" (a file:// page, a sandbox) and junk
  std::string_view authority = origin.substr(scheme_end + 3);
  if (const size_t slash = authority.find('/'); slash != std::string_view::npos) authority = authority.substr(0, slash);
  std::string_view host, port;
  if (!split_authority(authority, host, port)) return any_;
  return name_allowed(normalize(host));
}

std::string HostCheck::describe() const {
  std::string out;
  for (const std::string& n : names_) out += (out.empty() ? "" : ", ") + n;
  if (any_ip_) out += ", any IP address of this machine";
  return out;
}

}  // namespace spore::serve::http
