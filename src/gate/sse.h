// An incremental parser of Server-Sent Events as OpenAI-style servers send them
// (https://html.spec.whatwg.org/multipage/server-sent-events.html, the parts a client needs):
// lines end in LF, CRLF or CR; "field: value" lines build an event; a blank line dispatches it;
// lines starting with ':' are comments. It also records what a strict OpenAI client would
// object to (unknown fields, an event without data, a stream cut mid-event), which is what
// `spore gate` reports as framing problems (NOTE [Machine gate]).
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace spore::gate {

struct SseEvent {
  std::string event;  // the "event:" field, empty when absent
  std::string data;   // the "data:" lines joined by '\n'
};

class SseParser {
 public:
  // A hostile server may send an endless line; past this the line is dropped and noted.
  static constexpr size_t kMaxLine = 1 << 20;
  static constexpr size_t kMaxProblems = 16;

  void feed(const char* p, size_t n);
  // The stream has ended: a pending event that was never closed by a blank line is a problem.
  void finish();
  // The events completed since the last call.
  std::vector<SseEvent> take();
  const std::vector<std::string>& problems() const { return problems_; }
  size_t events_seen() const { return events_seen_; }

 private:
  void line(const std::string& l);
  void problem(std::string what);
  std::string buf_;
  bool pending_cr_ = false, overlong_ = false;
  bool has_data_ = false, in_event_ = false;
  SseEvent cur_;
  std::vector<SseEvent> ready_;
  std::vector<std::string> problems_;
  size_t events_seen_ = 0, lines_ = 0;
};

}  // namespace spore::gate
