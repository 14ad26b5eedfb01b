// Parsing JSON from outside under the one nesting bound, spore::kMaxJsonDepth (NOTE [Hostile
// JSON] in docs/design.md). Header-only because its users hold different JSON types
// (nlohmann::json, nlohmann::ordered_json); each library that includes it links nlohmann itself.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "spore/error.h"
#include "spore/json_limits.h"

namespace spore::io {

// A document nested deeper than kMaxJsonDepth: a kFormat Error that callers with their own way of
// answering (the server's 400 with a code) can tell apart from a syntax error.
class JsonTooDeep : public Error {
 public:
  JsonTooDeep()
      : Error(ErrorCode::kFormat, "the JSON nests objects and arrays deeper than " + std::to_string(kMaxJsonDepth) +
                                      " levels") {}
};

// nlohmann's parser is iterative, but copying the result, dump() and every walk over it recurse,
// so depth is refused as the parser opens each object or array (the callback's `depth` counts the
// containers around it), never after. Syntax errors are nlohmann::json::exception, as from
// Json::parse; the callers word them.
template <class Json = nlohmann::json>
Json parse_json_bounded(std::string_view text) {
  auto bounded = [](int depth, typename Json::parse_event_t event, Json&) {
    if ((event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth)
      throw JsonTooDeep();
    return true;
  };
  return Json::parse(text.begin(), text.end(), bounded);
}

}  // namespace spore::io
