// libFuzzer target: stop strings over streamed text (src/nlp/generate/stop_text.h).
// Input: stop strings separated by \x01 up to the first \x00, then the text; the text arrives in
// pieces of 1 + (first byte % 7) bytes.
//
// Contract checked: bad stop strings (empty, invalid UTF-8) throw kValue and nothing else;
// otherwise what is emitted equals a direct reference: at the first piece boundary where some stop
// string occurs in the text so far, the text before the earliest such occurrence; with no match,
// the whole text.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "nlp/generate/stop_text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spore;
  const std::string in(reinterpret_cast<const char*>(data), size);
  const size_t split = in.find('\0');
  if (split == std::string::npos || size == 0) return 0;
  std::vector<std::string> stops;
  for (size_t p = 0; p <= split;) {
    const size_t q = std::min(in.find('\x01', p), split);
    stops.push_back(in.substr(p, q - p));
    p = q + 1;
  }
  if (stops.size() == 1 && stops[0].empty()) stops.clear();
  const std::string text = in.substr(split + 1);
  const size_t piece = 1 + (size_t)(unsigned char)in[0] % 7;
  std::optional<nlp::detail::StopText> filter;
  try {
    filter.emplace(stops);
  } catch (const Error& e) {
    fuzz::require(e.code() == ErrorCode::kValue, "a bad stop string throws kValue");
    return 0;
  }
  std::string out, want = text;
  bool matched = false, want_matched = false;
  for (size_t at = 0; at < text.size() && !matched; at += piece) {
    out += filter->push(std::string_view(text).substr(at, piece), &matched);
    if (!want_matched) {
      const std::string so_far = text.substr(0, std::min(text.size(), at + piece));
      size_t first = std::string::npos;
      for (const std::string& s : stops) first = std::min(first, so_far.find(s));
      if (first != std::string::npos) want_matched = true, want = text.substr(0, first);
    }
  }
  if (!matched) out += filter->flush();
  fuzz::require(matched == want_matched, "a stop string is caught exactly when the text so far holds one");
  fuzz::require(out == want, "the emitted text is the text before the first stop string");
  return 0;
}
