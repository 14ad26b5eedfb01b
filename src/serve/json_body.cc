#include "serve/json_body.h"

#include <string>

#include "io/json_depth.h"
#include "serve/api_error.h"
#include "spore/json_limits.h"

namespace spore::serve {

using nlohmann::json;

nlohmann::json parse_json_object(std::string_view body, std::size_t max_bytes) {
  if (body.size() > max_bytes)
    throw ApiError(413, "The request body is " + std::to_string(body.size()) + " bytes, more than this server takes (" +
                            std::to_string(max_bytes) + " bytes); send less",
                   "invalid_request_error", "", "body_too_large");
  json j;
  try {
    j = io::parse_json_bounded<json>(body);
  } catch (const io::JsonTooDeep&) {
    throw ApiError(400, "The request body nests objects and arrays deeper than " + std::to_string(kMaxJsonDepth) +
                            " levels; no OpenAI request needs that many, so flatten it",
                   "invalid_request_error", "", "json_too_deep");
  } catch (const json::parse_error& e) {
    const std::string what = e.what();
    if (what.find("UTF-8") != std::string::npos || what.find("utf-8") != std::string::npos)
      throw ApiError(400, "The request body is not valid UTF-8 (byte " + std::to_string(e.byte) + "); send UTF-8 JSON",
                     "invalid_request_error", "", "invalid_utf8");
    throw ApiError(400, "The request body is not valid JSON (at byte " + std::to_string(e.byte) + "); send a JSON object",
                   "invalid_request_error", "", "invalid_json");
  } catch (const json::exception& e) {
    // A number too large for a double (out_of_range.406), found by the fuzz target.
    throw ApiError(400, std::string("The request body is not valid JSON: ") + e.what(), "invalid_request_error", "",
                   "invalid_json");
  }
  if (!j.is_object())
    throw ApiError(400, std::string("The request body must be a JSON object, got JSON ") + j.type_name(),
                   "invalid_request_error", "", "invalid_json");
  return j;
}

}  // namespace spore::serve
