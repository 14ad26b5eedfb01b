// A small blocking HTTP client on libcurl (Debian's libcurl4-openssl-dev, already used by
// `spore pull`) for `spore gate`: one request per call, the body handed to a callback as it
// arrives so the gate can time the first streamed token (NOTE [Machine gate]).
#pragma once
#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace spore::gate {

struct HttpResponse {
  long status = 0;          // 0 when no answer came (error says why)
  std::string error;        // curl's message: refused connection, timeout, ...
  std::string content_type;
  std::string body;         // the whole body (also when streamed to on_data)
  std::vector<std::string> headers;  // "Name: value" lines, as received
};

struct HttpRequest {
  std::string method = "GET";  // GET or POST
  std::string url;             // full URL: base + path
  std::string body;            // POST body (JSON)
  std::string api_key;         // sent as "Authorization: Bearer KEY" when not empty
  double timeout_s = 120;
  // Called with each piece of the body as it arrives (SSE streams).
  std::function<void(const char*, size_t)> on_data;
};

HttpResponse http_send(const HttpRequest& req);

// base URL + path with exactly one slash between them.
std::string join_url(const std::string& base, const std::string& path);

}  // namespace spore::gate
