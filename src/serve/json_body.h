// Every JSON body `spore serve` parses (the completion routes, /tokenize, /detokenize,
// /apply-template) goes through parse_json_object: one size bound and one nesting bound
// (spore::kMaxJsonDepth, NOTE [Hostile JSON]) enforced while parsing, so nothing downstream
// (copies of `tools` and `tool_calls`, dump(), the chat template's values) recurses deeper.
#pragma once
#include <nlohmann/json.hpp>

#include <cstddef>
#include <string_view>

namespace spore::serve {

inline constexpr std::size_t kDefaultMaxBodyBytes = std::size_t{1} << 20;  // ServeOptions::max_body_bytes

// Parses a JSON object body or throws ApiError: 413 body_too_large past `max_bytes` (the HTTP
// layer refuses those first; this holds whatever the transport handed over), 400 json_too_deep,
// invalid_utf8, invalid_json, or a body that is not an object.
nlohmann::json parse_json_object(std::string_view body, std::size_t max_bytes = kDefaultMaxBodyBytes);

}  // namespace spore::serve
