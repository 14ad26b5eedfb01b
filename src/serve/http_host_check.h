// The DNS-rebinding defence (NOTE [HTTP transport]): a web page on attacker.example whose name
// is made to resolve to 127.0.0.1 can send requests to a local server, but its browser still
// writes `Host: attacker.example:PORT` and `Origin: http://attacker.example`. Names are checked,
// so such requests are refused; IP literals cannot be rebound, so they are only compared with the
// address the server listens on.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace spore::serve::http {

class HostCheck {
 public:
  // bound_host: --host as given; port: the port listened on; allowed: --allowed-hosts (host names
  // or IP literals, case-insensitive; "*" allows any).
  HostCheck(std::string bound_host, int port, const std::vector<std::string>& allowed);
  // A Host field value (or absolute-form authority): host[:port]. The port, when given, must be
  // the one listened on.
  bool host_allowed(std::string_view authority) const;
  // An Origin field value: scheme://host[:port] ("null" and anything unparsable are refused). Any
  // port: a page on another local port (a development UI) is the same machine.
  bool origin_allowed(std::string_view origin) const;
  // For error messages: the names accepted, comma-separated.
  std::string describe() const;

 private:
  bool name_allowed(std::string host) const;  // lower-case, brackets kept for IPv6
  std::vector<std::string> names_;
  bool any_ = false;
  bool any_ip_ = false;  // bound to 0.0.0.0 or ::: every address of this machine is "the bound address"
  int port_;
};

}  // namespace spore::serve::http
