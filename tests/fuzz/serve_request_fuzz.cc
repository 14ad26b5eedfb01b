// libFuzzer target: the server's request parser (src/serve/request.cc), fed raw request bodies.
// The first byte picks the route (odd: chat, even: completions); the rest is the body.
//
// Contract checked: a body either parses or throws ApiError with a 400 status (413 only past the
// size bound), a non-empty message and an error object that serialises; a parsed request holds
// values in OpenAI's ranges (temperature [0, 2], top_p (0, 1], max_tokens in [1, context], n = 1,
// at most 4 stops, at most 128 tools) and its messages and tools nest no deeper than
// kMaxJsonDepth (NOTE [Hostile JSON]), so nothing the server does with them recurses deeper.
// Run with tests/fuzz/serve_request.dict (scripts/fuzz.sh), whose brackets let it explore depth.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include <utility>
#include <vector>

#include "fuzz_util.h"
#include "serve/request.h"
#include "spore/json_limits.h"

namespace {

// Containers nested in `j`, itself included; iterative, so it cannot itself overflow the stack
// when the parser fails to bound the depth.
int depth_of(const nlohmann::json& j) {
  int deepest = 0;
  std::vector<std::pair<const nlohmann::json*, int>> todo{{&j, 1}};
  while (!todo.empty()) {
    auto [v, d] = todo.back();
    todo.pop_back();
    if (!v->is_structured()) continue;
    deepest = std::max(deepest, d);
    for (const auto& child : *v) todo.push_back({&child, d + 1});
  }
  return deepest;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spore;
  if (size == 0) return 0;
  const bool chat = data[0] & 1;
  const std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  serve::RequestLimits limits{"smol", 8, 256};
  limits.lora_adapters = 2;  // "lora": [{"id", "scale"}] ids 0 and 1 (NOTE [LoRA adapters])
  try {
    const serve::CompletionRequest r = serve::parse_completion_request(body, chat, limits);
    const auto& s = r.generate.sampling;
    fuzz::require(s.temperature >= 0 && s.temperature <= 2, "temperature in [0, 2]");
    fuzz::require(s.top_p > 0 && s.top_p <= 1, "top_p in (0, 1]");
    fuzz::require(!r.max_tokens || (*r.max_tokens >= 1 && *r.max_tokens <= limits.context), "max_tokens in range");
    fuzz::require(r.generate.stop.size() <= 4, "at most 4 stops");
    fuzz::require(s.top_logprobs >= 0 && s.top_logprobs <= 20, "top_logprobs in [0, 20]");
    fuzz::require(s.top_k >= 0, "top_k off (0) or positive");
    fuzz::require(depth_of(r.messages) < spore::kMaxJsonDepth && depth_of(r.tools) < spore::kMaxJsonDepth,
                  "messages and tools within the depth bound");
    fuzz::require(r.tools.is_null() || (r.tools.is_array() && (int64_t)r.tools.size() <= serve::kMaxTools),
                  "at most 128 tools");
    if (chat) fuzz::require(!r.messages.empty() && (int64_t)r.messages.size() <= limits.max_messages, "messages in range");
    else fuzz::require(!r.prompt.empty(), "a prompt");
    (void)r.messages.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);  // valid UTF-8 throughout
    if (r.lora) {
      fuzz::require(r.lora->size() <= 2 && (r.lora->size() < 2 || (*r.lora)[0].id != (*r.lora)[1].id), "distinct ids");
      for (const serve::LoraScale& l : *r.lora)
        fuzz::require(l.id >= 0 && l.id < 2 && std::isfinite(l.scale), "adapter ids in range, finite scales");
    }
  } catch (const serve::ApiError& e) {
    // A model name other than the one served is OpenAI's 404 model_not_found (NOTE [Many models]).
    fuzz::require(e.status == 400 || (e.status == 413 && body.size() > limits.max_body_bytes) ||
                      (e.status == 404 && e.code == "model_not_found"),
                  "a parse error is a 400 (413 only past the size bound, 404 for another model)");
    fuzz::require(*e.what() != '\0', "an error says what is wrong");
    (void)e.to_json().dump();
  }
  return 0;
}
