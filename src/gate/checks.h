// The gate's individual checks (src/gate/checks.cc) and its load phase (src/gate/load.cc).
#pragma once
#include <string>

#include "gate/http_client.h"
#include "gate/shapes.h"
#include "spore/gate.h"

namespace spore::gate {

// What every check needs: where the server is and how to ask it.
struct Target {
  std::string url, api_key, model;
  int max_tokens = 32;
  double timeout_s = 120;
  HttpResponse get(const std::string& path) const;
  HttpResponse post(const std::string& path, const std::string& body) const;
};

CheckResult check_health(const Target& t, double wait_s);
CheckResult check_models_route(Target& t);  // sets t.model when it was empty
CheckResult check_chat_json(const Target& t);
CheckResult check_chat_sse(const Target& t);
CheckResult check_completion_json(const Target& t);
CheckResult check_malformed_json(const Target& t);
CheckResult check_unknown_model(const Target& t);
CheckResult check_unknown_route(const Target& t);
CheckResult check_load(const Target& t, int requests, int concurrency, LoadFigures& figures);

// The body of a small streamed chat request (the SSE check and the load phase).
std::string stream_body(const Target& t, const std::string& prompt);

}  // namespace spore::gate
