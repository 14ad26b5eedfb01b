// Parsing and validation of the OpenAI request bodies (/v1/chat/completions, /v1/completions),
// kept apart from HTTP so the fuzz target (tests/fuzz/serve_request_fuzz.cc) feeds it raw bytes.
// Every problem is an ApiError (400) naming the field; unknown fields are ignored, as OpenAI's
// clients send fields a server may not know.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "serve/api_error.h"
#include "serve/json_body.h"
#include "serve/lora_adapters.h"
#include "spore/nlp/generate.h"

namespace spore::serve {

struct RequestLimits {
  std::string model_id;        // the served model's id; "" accepts any "model"
  int64_t max_messages = 512;  // chat messages per request
  int64_t context = 2048;      // max_tokens may not exceed it
  std::size_t max_body_bytes = kDefaultMaxBodyBytes;  // larger bodies: 413
  nlp::SpeculativeOptions speculative{};  // the server's default (ServeOptions::speculative)
  bool draft_model = false;             // the server holds a draft model ("draft" is allowed)
  int64_t lora_adapters = 0;            // adapters the server holds ("lora" ids below it)
};

inline constexpr int64_t kMaxTools = 128;  // OpenAI's limit on a request's tools

struct CompletionRequest {
  bool chat = false;
  std::string model;
  nlohmann::json messages;     // chat: the messages as the chat template reads them (content as text)
  nlohmann::json tools;        // chat: the request's tools (null when none, or tool_choice "none")
  std::string prompt;          // completions: the prompt text
  std::optional<int64_t> max_tokens;
  nlp::GenerateOptions generate;  // sampling fields and stop strings set from the request
  bool stream = false;
  bool include_usage = false;     // stream_options.include_usage
  bool logprobs = false;
  int64_t top_logprobs = 0;
  bool echo = false;              // completions: echo the prompt
  // Constrained decoding (NOTE [Grammars]): set in generate.grammar from `grammar` (GBNF),
  // `response_format` (json_object, json_schema) or a forced tool call; forced_tools says the
  // last, so the server serves the tools even when the chat template does not render them.
  bool forced_tools = false;
  // "lora": [{"id", "scale"}] (NOTE [LoRA adapters]); nullopt: the server's global scales.
  std::optional<std::vector<LoraScale>> lora;
};

// `chat` selects which body is expected. Throws ApiError.
CompletionRequest parse_completion_request(std::string_view body, bool chat, const RequestLimits& limits);

}  // namespace spore::serve
