// Parsing JSON from outside under the one nesting bound, spore::kMaxJsonDepth (NOTE [Hostile
// JSON] in docs/design.md). Header-only because its users hold different JSON types
// (nlohmann::json, nlohmann::ordered_json); each library that includes it links nlohmann itself.
#pragma once
#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <string_view>

#include "spore/error.h"
#include "spore/json_limits.h"

namespace spore::io {

// A document nested deeper than its bound: a kFormat Error that callers with their own way of
// answering (the server's 400 with a code) can tell apart from a syntax error.
class JsonTooDeep : public Error {
 public:
  explicit JsonTooDeep(int max_depth = kMaxJsonDepth)
      : Error(ErrorCode::kFormat, "the JSON nests objects and arrays deeper than " + std::to_string(max_depth) +
                                      " levels") {}
};

// What a parse may watch besides building the document: each key, with the number of objects and
// arrays around it (the safetensors header refuses duplicate names this way).
class JsonWatch {
 public:
  virtual ~JsonWatch() = default;
  virtual void open_object() {}
  virtual void close_object() {}
  virtual void key(const std::string& name, int depth) {}
};

namespace detail {

// nlohmann's plain DOM builder behind a depth count. Not nlohmann's callback parser: that one
// scans the enclosing container for a discarded value at the end of every object, so an array of
// n objects costs n^2/2 steps (65,536 small objects took 2 s, and 3 minutes under ASan).
template <class Json>
class BoundedSax {
  using Dom = nlohmann::detail::json_sax_dom_parser<Json>;

 public:
  BoundedSax(Json& out, int max_depth, JsonWatch* watch) : dom_(out, true), max_(max_depth), watch_(watch) {}

  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(typename Json::number_integer_t v) { return dom_.number_integer(v); }
  bool number_unsigned(typename Json::number_unsigned_t v) { return dom_.number_unsigned(v); }
  bool number_float(typename Json::number_float_t v, const typename Json::string_t& s) {
    return dom_.number_float(v, s);
  }
  bool string(typename Json::string_t& s) { return dom_.string(s); }
  bool binary(typename Json::binary_t& b) { return dom_.binary(b); }
  bool start_object(std::size_t n) {
    enter();
    if (watch_) watch_->open_object();
    return dom_.start_object(n);
  }
  bool key(typename Json::string_t& k) {
    if (watch_) watch_->key(k, depth_);
    return dom_.key(k);
  }
  bool end_object() {
    --depth_;
    if (watch_) watch_->close_object();
    return dom_.end_object();
  }
  bool start_array(std::size_t n) {
    enter();
    return dom_.start_array(n);
  }
  bool end_array() {
    --depth_;
    return dom_.end_array();
  }
  template <class Exception>
  bool parse_error(std::size_t at, const std::string& token, const Exception& e) {
    return dom_.parse_error(at, token, e);
  }

 private:
  // Refused as each container opens, never after: copying the result, dump() and every walk over
  // it recurse.
  void enter() {
    if (depth_ >= max_) throw JsonTooDeep(max_);
    ++depth_;
  }

  Dom dom_;
  int max_;
  int depth_ = 0;
  JsonWatch* watch_;
};

}  // namespace detail

// Parses `text` (the whole of it, as Json::parse) with at most `max_depth` objects and arrays
// nested. Syntax errors are nlohmann::json::exception, as from Json::parse; the callers word them.
template <class Json = nlohmann::json>
Json parse_json_bounded(std::string_view text, int max_depth = kMaxJsonDepth, JsonWatch* watch = nullptr) {
  Json out;
  detail::BoundedSax<Json> sax(out, max_depth, watch);
  Json::sax_parse(text.begin(), text.end(), &sax);
  return out;
}

}  // namespace spore::io
