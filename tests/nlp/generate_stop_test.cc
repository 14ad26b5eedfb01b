// Stop strings over streamed text: a stop string split across pieces is caught, nothing of it is
// emitted, text that only looked like its start is released, and multi-byte text stays whole.
#include <gtest/gtest.h>

#include "nlp/generate/stop_text.h"
#include "spore/error.h"
#include "test_util.h"

namespace {

using spore::nlp::detail::StopText;

// Feeds the pieces; returns what was emitted and whether a stop matched.
std::pair<std::string, bool> feed(StopText& s, const std::vector<std::string>& pieces) {
  std::string out;
  for (const std::string& p : pieces) {
    bool matched = false;
    out += s.push(p, &matched);
    if (matched) return {out, true};
  }
  return {out + s.flush(), false};
}

TEST(GenerateStop, AcrossPiecesNothingOfTheStopIsEmitted) {
  StopText s({"STOP"});
  bool m = false;
  EXPECT_EQ(s.push("Hello S", &m), "Hello ");  // "S" may start STOP: held
  EXPECT_FALSE(m);
  EXPECT_EQ(s.push("T", &m), "");
  EXPECT_EQ(s.push("OP and more", &m), "");
  EXPECT_TRUE(m);
}

TEST(GenerateStop, FalseStartsAreReleased) {
  StopText s({"STOP"});
  auto [out, matched] = feed(s, {"a ST", "ORY ", "ST"});
  EXPECT_FALSE(matched);
  EXPECT_EQ(out, "a STORY ST");  // the trailing ST is released at the end
}

TEST(GenerateStop, EarliestOfSeveralWinsAndTextBeforeItIsKept) {
  StopText s({"\n\n", "User:", "###"});
  auto [out, matched] = feed(s, {"answer ##", "x User", ": hi\n\nmore"});
  EXPECT_TRUE(matched);
  EXPECT_EQ(out, "answer ##x ");
}

TEST(GenerateStop, MultiByteStopAndText) {
  StopText s({"。结束"});
  auto [out, matched] = feed(s, {"深度学习", "。", "结", "束了"});
  EXPECT_TRUE(matched);
  EXPECT_EQ(out, "深度学习");
  StopText e({"🦙🦙"});
  auto [out2, m2] = feed(e, {"llama 🦙", " and 🦙", "🤗"});
  EXPECT_FALSE(m2);
  EXPECT_EQ(out2, "llama 🦙 and 🦙🤗");
}

TEST(GenerateStop, NoStopsPassesThrough) {
  StopText s({});
  bool m = false;
  EXPECT_EQ(s.push("abc", &m), "abc");
  EXPECT_FALSE(s.holding());
}

TEST(GenerateStop, BadStopStringsAreTypedErrors) {
  spore::test::expect_error([] { StopText({"ok", ""}); }, spore::ErrorCode::kValue, "stop string 1 is empty");
  spore::test::expect_error([] { StopText({"\xC3"}); }, spore::ErrorCode::kValue, "not valid UTF-8");
}

}  // namespace
