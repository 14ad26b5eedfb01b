// Stop strings (NOTE [Generation]).
#include "nlp/generate/stop_text.h"

#include <algorithm>
#include <utility>

#include "nlp/tokenizer/utf8.h"
#include "spore/error.h"

namespace spore::nlp::detail {

StopText::StopText(std::vector<std::string> stops) : stops_(std::move(stops)) {
  for (size_t i = 0; i < stops_.size(); ++i) {
    if (stops_[i].empty())
      throw Error(ErrorCode::kValue, "stop string " + std::to_string(i) + " is empty; remove it");
    const size_t bad = find_invalid_utf8(stops_[i]);
    if (bad != kValidUtf8)
      throw Error(ErrorCode::kValue, "stop string " + std::to_string(i) + " is not valid UTF-8 (byte " +
                                         std::to_string(bad) + "); give stop strings as UTF-8 text");
  }
}

std::string StopText::push(std::string_view text, bool* matched) {
  *matched = false;
  held_.append(text);
  if (stops_.empty()) return std::exchange(held_, {});
  // A match can only lie in the held text plus the new text: everything emitted before had no
  // suffix that starts a stop string.
  size_t first = std::string::npos;
  for (const std::string& s : stops_) first = std::min(first, held_.find(s));
  if (first != std::string::npos) {
    *matched = true;
    std::string out = held_.substr(0, first);
    held_.clear();
    return out;
  }
  // Keep the longest suffix that is a proper prefix of some stop string. Stop strings are valid
  // UTF-8, so that suffix starts on a character boundary and the emitted part is whole characters.
  size_t hold = 0;
  for (const std::string& s : stops_) {
    for (size_t k = std::min(s.size() - 1, held_.size()); k > hold; --k) {
      if (held_.compare(held_.size() - k, k, s, 0, k) == 0) {
        hold = k;
        break;
      }
    }
  }
  std::string out = held_.substr(0, held_.size() - hold);
  held_.erase(0, held_.size() - hold);
  return out;
}

std::string StopText::flush() { return std::exchange(held_, {}); }

}  // namespace spore::nlp::detail
