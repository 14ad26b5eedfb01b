// libFuzzer target: spore gate's reading of server answers (src/gate/sse.cc, src/gate/shapes.cc),
// fed raw response bodies. The first byte picks the reader and how the body is cut into pieces
// (a stream arrives in arbitrary pieces): bit 0 set: an SSE stream folded into a chat stream
// summary; clear: a JSON answer held to every shape (chat, chunk, completion, models, error).
//
// Contract checked: nothing throws or crashes; the SSE parser gives the same events and problems
// however the bytes are cut; problem lists stay bounded; a stream summary with [DONE] has
// nothing after it counted as content.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "gate/shapes.h"
#include "gate/sse.h"

namespace {

using namespace spore::gate;

std::vector<SseEvent> run_sse(const std::string& body, size_t piece, SseParser& p) {
  std::vector<SseEvent> out;
  for (size_t i = 0; i < body.size(); i += piece) {
    p.feed(body.data() + i, std::min(piece, body.size() - i));
    for (auto& e : p.take()) out.push_back(std::move(e));
  }
  p.finish();
  for (auto& e : p.take()) out.push_back(std::move(e));
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using spore::fuzz::require;
  if (size == 0) return 0;
  const std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1) {
    const size_t piece = 1 + (data[0] >> 1);
    SseParser whole, cut;
    const auto a = run_sse(body, body.size() + 1, whole);
    const auto b = run_sse(body, piece, cut);
    require(a.size() == b.size(), "the same events however the bytes are cut");
    for (size_t i = 0; i < a.size(); ++i) require(a[i].data == b[i].data && a[i].event == b[i].event, "same event");
    require(whole.problems() == cut.problems(), "the same problems however the bytes are cut");
    require(whole.problems().size() <= SseParser::kMaxProblems, "problems bounded");
    StreamSummary s;
    for (const auto& e : a) add_chat_event(s, e.data);
    finish_chat_stream(s, (data[0] & 2) != 0);
    require(s.content_chunks >= 0 && (s.content_chunks > 0 || s.content.empty()), "content only from content chunks");
  } else {
    nlohmann::json j;
    std::string error;
    if (!parse_answer(body, j, error)) {
      require(!error.empty(), "a refused answer says why");
      return 0;
    }
    (void)check_chat_completion(j);
    (void)check_chat_chunk(j);
    (void)check_completion(j);
    (void)check_models(j);
    (void)check_error_object(j);
    (void)check_usage(j, "usage");
  }
  return 0;
}
