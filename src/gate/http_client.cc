#include "gate/http_client.h"

#include <curl/curl.h>

#include <memory>
#include <mutex>

namespace spore::gate {

namespace {

struct Sink {
  HttpResponse* res;
  const HttpRequest* req;
};

size_t on_body(char* p, size_t size, size_t n, void* user) {
  auto* s = static_cast<Sink*>(user);
  s->res->body.append(p, size * n);
  if (s->req->on_data) s->req->on_data(p, size * n);
  return size * n;
}

size_t on_header(char* p, size_t size, size_t n, void* user) {
  auto* res = static_cast<HttpResponse*>(user);
  std::string line(p, size * n);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  if (!line.empty()) res->headers.push_back(line);
  return size * n;
}

}  // namespace

std::string join_url(const std::string& base, const std::string& path) {
  std::string b = base;
  while (!b.empty() && b.back() == '/') b.pop_back();
  return b + (path.empty() || path[0] == '/' ? path : "/" + path);
}

HttpResponse http_send(const HttpRequest& req) {
  static std::once_flag once;
  // curl_global_init is not thread-safe; the load phase calls this from many threads.
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  HttpResponse res;
  std::unique_ptr<CURL, void (*)(CURL*)> c(curl_easy_init(), curl_easy_cleanup);
  if (!c) {
    res.error = "curl_easy_init failed";
    return res;
  }
  Sink sink{&res, &req};
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Content-Type: application/json");
  if (!req.api_key.empty()) headers = curl_slist_append(headers, ("Authorization: Bearer " + req.api_key).c_str());
  curl_easy_setopt(c.get(), CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(c.get(), CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c.get(), CURLOPT_USERAGENT, "spore-gate/1");
  curl_easy_setopt(c.get(), CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for timeouts
  curl_easy_setopt(c.get(), CURLOPT_CONNECTTIMEOUT, 10L);
  curl_easy_setopt(c.get(), CURLOPT_TIMEOUT_MS, (long)(req.timeout_s * 1000));
  curl_easy_setopt(c.get(), CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c.get(), CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(c.get(), CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c.get(), CURLOPT_HEADERDATA, &res);
  if (req.method == "POST") {
    curl_easy_setopt(c.get(), CURLOPT_POST, 1L);
    curl_easy_setopt(c.get(), CURLOPT_POSTFIELDS, req.body.data());
    curl_easy_setopt(c.get(), CURLOPT_POSTFIELDSIZE, (long)req.body.size());
  }
  const CURLcode rc = curl_easy_perform(c.get());
  curl_slist_free_all(headers);
  // The status is kept even when the transfer failed part way (a stream cut by a timeout).
  curl_easy_getinfo(c.get(), CURLINFO_RESPONSE_CODE, &res.status);
  if (rc != CURLE_OK) {
    res.error = curl_easy_strerror(rc);
    return res;
  }
  char* ct = nullptr;
  curl_easy_getinfo(c.get(), CURLINFO_CONTENT_TYPE, &ct);
  if (ct) res.content_type = ct;
  return res;
}

}  // namespace spore::gate
