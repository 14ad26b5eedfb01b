// Stop strings over streamed text (NOTE [Generation]): text is held back while its end could still
// be the start of a stop string, so a stop string split across tokens is caught and never emitted.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace spore::nlp::detail {

class StopText {
 public:
  // kValue for an empty stop string or one that is not valid UTF-8.
  explicit StopText(std::vector<std::string> stops);

  // Appends newly decoded text. Returns what may be shown now. When a stop string is complete,
  // *matched becomes true and the return value is the text before the earliest match; everything
  // from the match on is dropped.
  std::string push(std::string_view text, bool* matched);
  // The end of the stream: the held-back text (a partial stop string that never completed).
  std::string flush();
  bool holding() const { return !held_.empty(); }

 private:
  std::vector<std::string> stops_;
  std::string held_;
};

}  // namespace spore::nlp::detail
