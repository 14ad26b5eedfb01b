// Tool-call markup -> OpenAI tool_calls (src/serve/tool_calls.cc). The inputs are the forms the
// model families document: Qwen2.5/Hermes <tool_call> blocks, Llama 3.1's bare JSON object.
#include <gtest/gtest.h>

#include "serve/tool_calls.h"

namespace spore::serve {
namespace {

TEST(ServeToolCalls, QwenBlocks) {
  const ParsedAnswer a = parse_tool_calls(
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>");
  ASSERT_EQ(a.calls.size(), 2u);
  EXPECT_EQ(a.calls[0].name, "get_weather");
  EXPECT_EQ(nlohmann::json::parse(a.calls[0].arguments), nlohmann::json({{"city", "Paris"}}));
  EXPECT_EQ(a.calls[1].name, "get_time");
  EXPECT_EQ(a.calls[1].arguments, "{}");
  EXPECT_EQ(a.content, "Let me check.");
  const nlohmann::json j = tool_calls_json(a.calls, "x", true);
  EXPECT_EQ(j[1]["index"], 1);
  EXPECT_EQ(j[0]["type"], "function");
  EXPECT_EQ(j[0]["function"]["name"], "get_weather");
  EXPECT_TRUE(j[0]["function"]["arguments"].is_string());
  EXPECT_NE(j[0]["id"], j[1]["id"]);
}

TEST(ServeToolCalls, Llama3Json) {
  const ParsedAnswer a = parse_tool_calls("<|python_tag|>{\"name\": \"search\", \"parameters\": {\"q\": \"spore\"}}");
  ASSERT_EQ(a.calls.size(), 1u);
  EXPECT_EQ(a.calls[0].name, "search");
  EXPECT_EQ(nlohmann::json::parse(a.calls[0].arguments)["q"], "spore");
  EXPECT_TRUE(a.content.empty());
}

TEST(ServeToolCalls, PlainTextAndBrokenMarkupStayContent) {
  for (const char* text : {"Paris is the capital.", "<tool_call>{not json}</tool_call>", "{\"no_name\": 1}",
                           "{\"name\": 5, \"arguments\": {}}", ""}) {
    const ParsedAnswer a = parse_tool_calls(text);
    EXPECT_TRUE(a.calls.empty()) << text;
    EXPECT_EQ(a.content, text);
  }
}

}  // namespace
}  // namespace spore::serve
