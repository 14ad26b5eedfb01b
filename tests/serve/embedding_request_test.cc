// The /v1/embeddings and /v1/rerank body parsers (src/serve/embedding_request.cc, NOTE
// [Embeddings]): OpenAI's input forms and the 4xx answers for what OpenAI's API refuses.
#include <gtest/gtest.h>

#include "serve/embedding_request.h"

namespace spore::serve {
namespace {

EmbeddingLimits limits() {
  EmbeddingLimits l;
  l.model_id = "bert";
  l.vocab = 100;
  l.dimensions = 32;
  l.max_inputs = 4;
  return l;
}

// The status and code of the error a body gets ("" when it parses).
std::pair<int, std::string> refusal(const std::string& body, bool rerank = false) {
  try {
    if (rerank)
      parse_rerank_request(body, limits());
    else
      parse_embedding_request(body, limits());
  } catch (const ApiError& e) {
    return {e.status, e.code};
  }
  return {200, ""};
}

TEST(EmbeddingRequest, InputForms) {
  auto r = parse_embedding_request(R"({"input": "hello", "model": "bert"})", limits());
  ASSERT_EQ(r.inputs.size(), 1u);
  EXPECT_EQ(r.inputs[0].text, "hello");
  EXPECT_FALSE(r.base64);
  r = parse_embedding_request(R"({"input": ["a", "b"], "encoding_format": "base64", "dimensions": 8})", limits());
  ASSERT_EQ(r.inputs.size(), 2u);
  EXPECT_TRUE(r.base64);
  EXPECT_EQ(r.dimensions, 8);
  r = parse_embedding_request(R"({"input": [2, 17, 3]})", limits());
  ASSERT_EQ(r.inputs.size(), 1u);
  EXPECT_TRUE(r.inputs[0].is_ids);
  EXPECT_EQ(r.inputs[0].ids, (std::vector<int32_t>{2, 17, 3}));
  r = parse_embedding_request(R"({"input": [[2, 3], "text"]})", limits());
  ASSERT_EQ(r.inputs.size(), 2u);
  EXPECT_TRUE(r.inputs[0].is_ids);
  EXPECT_EQ(r.inputs[1].text, "text");
}

TEST(EmbeddingRequest, BadInputsAre400s) {
  EXPECT_EQ(refusal(R"({})"), std::make_pair(400, std::string("missing_field")));
  EXPECT_EQ(refusal(R"({"input": []})"), std::make_pair(400, std::string("empty_input")));
  EXPECT_EQ(refusal(R"({"input": ""})"), std::make_pair(400, std::string("empty_input")));
  EXPECT_EQ(refusal(R"({"input": ["a", ""]})"), std::make_pair(400, std::string("empty_input")));
  EXPECT_EQ(refusal(R"({"input": [[]]})"), std::make_pair(400, std::string("empty_input")));
  EXPECT_EQ(refusal(R"({"input": ["a", {"x": 1}]})"), std::make_pair(400, std::string("invalid_type")));
  EXPECT_EQ(refusal(R"({"input": ["a", 5]})"), std::make_pair(400, std::string("invalid_type")));
  EXPECT_EQ(refusal(R"({"input": 5})"), std::make_pair(400, std::string("invalid_type")));
  EXPECT_EQ(refusal(R"({"input": [1, 100]})"), std::make_pair(400, std::string("invalid_value")));
  EXPECT_EQ(refusal(R"({"input": [1, -1]})"), std::make_pair(400, std::string("invalid_value")));
  EXPECT_EQ(refusal(R"({"input": [1, 2.5]})"), std::make_pair(400, std::string("invalid_value")));
  EXPECT_EQ(refusal(R"({"input": ["a", "b", "c", "d", "e"]})"), std::make_pair(400, std::string("too_many_inputs")));
  EXPECT_EQ(refusal(R"({"input": "a", "encoding_format": "int8"})"), std::make_pair(400, std::string("invalid_value")));
  EXPECT_EQ(refusal(R"({"input": "a", "dimensions": 0})"), std::make_pair(400, std::string("invalid_value")));
  EXPECT_EQ(refusal(R"({"input": "a", "dimensions": 33})"), std::make_pair(400, std::string("invalid_value")));
  EXPECT_EQ(refusal(R"({"input": "a", "dimensions": -3})"), std::make_pair(400, std::string("invalid_value")));
  EXPECT_EQ(refusal(R"({"input": "a", "dimensions": "8"})"), std::make_pair(400, std::string("invalid_type")));
  EXPECT_EQ(refusal(R"({"input": "a", "model": "other"})"), std::make_pair(404, std::string("model_not_found")));
  EXPECT_EQ(refusal(R"([1, 2])").first, 400);
  EXPECT_EQ(refusal(R"({"input": "a", "dimensions": 32, "model": "bert"})").first, 200);
}

TEST(EmbeddingRequest, Rerank) {
  const auto r = parse_rerank_request(R"({"query": "q", "documents": ["a", "b"], "top_n": 1, "return_text": true})", limits());
  EXPECT_EQ(r.query, "q");
  EXPECT_EQ(r.documents, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r.top_n, 1);
  EXPECT_TRUE(r.return_documents);
  EXPECT_EQ(refusal(R"({"documents": ["a"]})", true), std::make_pair(400, std::string("invalid_type")));
  EXPECT_EQ(refusal(R"({"query": "q", "documents": []})", true), std::make_pair(400, std::string("empty_input")));
  EXPECT_EQ(refusal(R"({"query": "q", "documents": ["a", 3]})", true), std::make_pair(400, std::string("invalid_type")));
  EXPECT_EQ(refusal(R"({"query": "", "documents": ["a"]})", true), std::make_pair(400, std::string("empty_input")));
  EXPECT_EQ(refusal(R"({"query": "q", "documents": ["a"], "top_n": 0})", true), std::make_pair(400, std::string("invalid_value")));
}

}  // namespace
}  // namespace spore::serve
