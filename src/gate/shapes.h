// The OpenAI response shapes `spore gate` holds every answer to (NOTE [Machine gate]). Each
// check returns the problems it found, empty when the document has the shape; a problem names
// the member ("choices[0].message.role") and what was wrong. The shapes are those of OpenAI's API
// reference (the members its official clients read), not Spore's own output: a server that
// drops `created` or calls the object "chat_completion" fails.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace spore::gate {

using Problems = std::vector<std::string>;

// Parses a server's answer. A body that is not JSON, or nests deeper than kMaxDepth (every
// later walk over it recurses), is refused: false, with the reason in `error`.
inline constexpr int kMaxDepth = 64;
bool parse_answer(const std::string& text, nlohmann::json& out, std::string& error);

Problems check_models(const nlohmann::json& j);           // GET /v1/models
Problems check_chat_completion(const nlohmann::json& j);  // POST /v1/chat/completions, JSON
Problems check_chat_chunk(const nlohmann::json& j);       // one SSE chunk of the same
Problems check_completion(const nlohmann::json& j);       // POST /v1/completions, JSON
Problems check_usage(const nlohmann::json& j, const std::string& at);  // {prompt,completion,total}_tokens
Problems check_error_object(const nlohmann::json& j);     // {"error": {message, type, param, code}}

// What a streamed chat completion added up to, and what was wrong with it as a whole.
struct StreamSummary {
  Problems problems;
  std::string content;        // the content deltas joined
  int content_chunks = 0;     // chunks with non-empty content
  bool done = false;          // "data: [DONE]" came, last
  bool usage_seen = false;    // a usage chunk (choices == []) came before [DONE]
  long long completion_tokens = -1, prompt_tokens = -1;  // from that usage chunk
  std::string finish_reason;
  std::string id;             // every chunk of one completion carries the same id
};

// Folds one SSE event's data into the summary (chunk shape, one id throughout, nothing after
// [DONE], one finish_reason, the usage chunk last with empty choices).
void add_chat_event(StreamSummary& s, const std::string& data);
// After the stream: [DONE] must have come, and the usage chunk when it was asked for.
void finish_chat_stream(StreamSummary& s, bool usage_requested);

}  // namespace spore::gate
