#include "gate/sse.h"

#include <utility>

namespace spore::gate {

void SseParser::problem(std::string what) {
  if (problems_.size() < kMaxProblems) problems_.push_back(std::move(what));
}

void SseParser::feed(const char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const char c = p[i];
    if (c == '\n' && pending_cr_) {  // the LF of a CRLF already ended the line
      pending_cr_ = false;
      continue;
    }
    pending_cr_ = false;
    if (c == '\r' || c == '\n') {
      pending_cr_ = c == '\r';
      if (!overlong_) line(buf_);
      overlong_ = false;
      buf_.clear();
      continue;
    }
    if (overlong_) continue;
    if (buf_.size() >= kMaxLine) {
      problem("line " + std::to_string(lines_ + 1) + " is longer than " + std::to_string(kMaxLine) + " bytes; dropped");
      overlong_ = true;
      buf_.clear();
      continue;
    }
    buf_.push_back(c);
  }
}

void SseParser::line(const std::string& l) {
  ++lines_;
  if (l.empty()) {  // dispatch
    if (in_event_) {
      if (!has_data_) problem("event " + std::to_string(events_seen_ + 1) + " has no data field");
      else ready_.push_back(std::move(cur_));
      ++events_seen_;
    }
    cur_ = SseEvent{};
    has_data_ = in_event_ = false;
    return;
  }
  if (l[0] == ':') return;  // a comment (keep-alive)
  in_event_ = true;
  const size_t colon = l.find(':');
  const std::string name = l.substr(0, colon);
  std::string value = colon == std::string::npos ? "" : l.substr(colon + 1);
  if (!value.empty() && value[0] == ' ') value.erase(0, 1);
  if (name == "data") {
    if (has_data_) cur_.data += '\n';
    cur_.data += value;
    has_data_ = true;
  } else if (name == "event") {
    cur_.event = value;
  } else if (name == "id" || name == "retry") {
    // legal, and nothing an OpenAI client uses
  } else {
    problem("line " + std::to_string(lines_) + ": unknown field '" + name.substr(0, 40) + "'");
  }
}

void SseParser::finish() {
  if (pending_cr_) pending_cr_ = false;
  if (!buf_.empty() || overlong_) {
    problem("the stream ended in the middle of a line");
    buf_.clear();
    overlong_ = false;
    in_event_ = true;
  }
  if (in_event_) problem("the stream ended inside an event (no blank line after its last data line)");
  in_event_ = has_data_ = false;
  cur_ = SseEvent{};
}

std::vector<SseEvent> SseParser::take() { return std::exchange(ready_, {}); }

}  // namespace spore::gate
