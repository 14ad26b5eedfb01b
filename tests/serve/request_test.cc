// The request parser (src/serve/request.cc): OpenAI fields map onto the engine's options, and
// every malformed body is a 400 ApiError naming the field.
#include <gtest/gtest.h>

#include <string>

#include "serve/request.h"

namespace spore::serve {
namespace {

RequestLimits limits() { return RequestLimits{"smol", 4, 2048}; }

ApiError error_of(const std::string& body, bool chat = true) {
  try {
    parse_completion_request(body, chat, limits());
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for " << body;
  return ApiError(0, "");
}

TEST(ServeRequest, ChatFieldsMapOntoTheEngine) {
  const CompletionRequest r = parse_completion_request(
      R"({"model":"smol","messages":[{"role":"system","content":"be brief"},
          {"role":"user","content":[{"type":"text","text":"hi "},{"type":"text","text":"there"}]}],
          "temperature":0.5,"top_p":0.9,"max_tokens":7,"stop":["a","b"],"seed":42,"presence_penalty":0.5,
          "frequency_penalty":-1,"n":1,"logprobs":true,"top_logprobs":3,"stream":true,
          "stream_options":{"include_usage":true},"unknown_field":{"x":1}})",
      true, limits());
  EXPECT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[1]["content"], "hi there");
  EXPECT_DOUBLE_EQ(r.generate.sampling.temperature, 0.5);
  EXPECT_DOUBLE_EQ(r.generate.sampling.top_p, 0.9);
  EXPECT_EQ(*r.max_tokens, 7);
  EXPECT_EQ(r.generate.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(*r.generate.sampling.seed, 42u);
  EXPECT_DOUBLE_EQ(r.generate.sampling.presence_penalty, 0.5);
  EXPECT_DOUBLE_EQ(r.generate.sampling.frequency_penalty, -1);
  EXPECT_TRUE(r.generate.sampling.logprobs);
  EXPECT_EQ(r.generate.sampling.top_logprobs, 3);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
}

TEST(ServeRequest, CompletionPromptForms) {
  EXPECT_EQ(parse_completion_request(R"({"prompt":"abc","stop":"x","max_completion_tokens":3})", false, limits()).prompt, "abc");
  EXPECT_EQ(parse_completion_request(R"({"prompt":["abc"]})", false, limits()).prompt, "abc");
  const CompletionRequest r = parse_completion_request(R"({"prompt":"p","logprobs":2})", false, limits());
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 2);
}

TEST(ServeRequest, ErrorCatalogue) {
  struct Case {
    const char* body;
    bool chat;
    const char* param;
    const char* code;
  };
  const Case cases[] = {
      {"{", true, "", "invalid_json"},
      {"[1]", true, "", "invalid_json"},
      {"{\"temperature\":21e308}", true, "", "invalid_json"},  // number overflow (a fuzz finding)
      {"{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}", true, "", "invalid_utf8"},
      {R"({})", true, "messages", "missing_field"},
      {R"({"messages":[]})", true, "messages", "empty_messages"},
      {R"({"messages":"hi"})", true, "messages", "invalid_type"},
      {R"({"messages":[{"role":"user","content":"a"},{"role":"user","content":"a"},{"role":"user","content":"a"},
          {"role":"user","content":"a"},{"role":"user","content":"a"}]})", true, "messages", "too_many_messages"},
      {R"({"messages":[{"role":"wizard","content":"a"}]})", true, "messages[0].role", "invalid_value"},
      {R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})", true, "messages[0].content[0].type", "unsupported_content"},
      {R"({"model":"gpt-4","messages":[{"role":"user","content":"a"}]})", true, "model", "model_not_found"},
      {R"({"messages":[{"role":"user","content":"a"}],"temperature":"hot"})", true, "temperature", "invalid_type"},
      {R"({"messages":[{"role":"user","content":"a"}],"temperature":9})", true, "temperature", "invalid_value"},
      {R"({"messages":[{"role":"user","content":"a"}],"top_p":0})", true, "top_p", "invalid_value"},
      {R"({"messages":[{"role":"user","content":"a"}],"max_tokens":-1})", true, "max_tokens", "invalid_value"},
      {R"({"messages":[{"role":"user","content":"a"}],"max_tokens":100000000})", true, "max_tokens", "invalid_value"},
      {R"({"messages":[{"role":"user","content":"a"}],"max_tokens":1.5})", true, "max_tokens", "invalid_type"},
      {R"({"messages":[{"role":"user","content":"a"}],"n":2})", true, "n", "unsupported_value"},
      {R"({"messages":[{"role":"user","content":"a"}],"stop":["a","b","c","d","e"]})", true, "stop", "invalid_value"},
      {R"({"messages":[{"role":"user","content":"a"}],"stop":[1]})", true, "stop", "invalid_type"},
      {R"({"messages":[{"role":"user","content":"a"}],"stop":""})", true, "stop", "invalid_value"},
      {R"({"messages":[{"role":"user","content":"a"}],"seed":"x"})", true, "seed", "invalid_type"},
      {R"({"messages":[{"role":"user","content":"a"}],"presence_penalty":3})", true, "presence_penalty", "invalid_value"},
      {R"({"messages":[{"role":"user","content":"a"}],"top_logprobs":3})", true, "top_logprobs", "invalid_value"},
      {R"({"messages":[{"role":"user","content":"a"}],"logprobs":true,"top_logprobs":21})", true, "top_logprobs", "invalid_value"},
      {R"({"messages":[{"role":"user","content":"a"}],"stream":"yes"})", true, "stream", "invalid_type"},
      {R"({"messages":[{"role":"user","content":"a"}],"stream_options":{"include_usage":true}})", true, "stream_options", "invalid_value"},
      {R"({"prompt":""})", false, "prompt", "empty_prompt"},
      {R"({"prompt":["a","b"]})", false, "prompt", "unsupported_value"},
      {R"({"prompt":5})", false, "prompt", "invalid_type"},
      {R"({"prompt":"a","logprobs":9})", false, "logprobs", "invalid_value"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    const ApiError e = error_of(c.body, c.chat);
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.param, c.param);
    EXPECT_EQ(e.code, c.code);
    const nlohmann::json j = e.to_json();
    for (const char* key : {"message", "type", "param", "code"}) EXPECT_TRUE(j["error"].contains(key)) << key;
    EXPECT_FALSE(j["error"]["message"].get<std::string>().empty());
  }
}

}  // namespace
}  // namespace spore::serve
