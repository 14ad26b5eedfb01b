// /v1/embeddings on a decoder model (NOTE [Embeddings]): the real SmolLM2 served by `spore
// serve` (skipped without it) gives the vectors the library's EmbeddingModel gives for the same
// texts (last-token pooling; the HTTP layer adds nothing), normalised, with the token counts as
// usage; completions keep working beside it. The encoder side is tests/serve/
// embeddings_openai_test.py on the tiny fixtures.
#include <gtest/gtest.h>
#include <httplib.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "serve/serve_suite.h"
#include "serve/serve_test_util.h"
#include "spore/nlp/embed.h"

namespace {

using nlohmann::json;
using namespace spore::test;

class ServeDecoderEmbeddings : public ServeSuite<ServeDecoderEmbeddings> {
 protected:
  static void SetUpTestSuite() { start_suite({"--slots", "1", "--ctx", "256", "--threads", "2"}); }
  json post(const std::string& path, const json& body, int want_status = 200) {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(120, 0);
    auto r = c.Post(path, body.dump(), "application/json");
    EXPECT_TRUE(r);
    if (!r) return json();
    EXPECT_EQ(r->status, want_status) << r->body;
    return json::parse(r->body);
  }
};

TEST_F(ServeDecoderEmbeddings, VectorsAreTheLibrarysLastTokenPooling) {
  const std::vector<std::string> texts = {"The capital of France is Paris.", "Hello"};
  const json j = post("/v1/embeddings", {{"input", texts}});
  ASSERT_EQ(j["data"].size(), 2u);
  const auto m = spore::nlp::load_embedding_model(model_path());
  EXPECT_EQ(m.pooling(), spore::nlp::Pooling::kLast);
  int64_t tokens = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto ids = m.tokenize(texts[i]);
    tokens += static_cast<int64_t>(ids.size());
    const auto want = m.embed({ids})[0];
    const auto got = j["data"][i]["embedding"].get<std::vector<float>>();
    ASSERT_EQ(got.size(), static_cast<size_t>(m.dimensions()));
    double norm = 0, diff = 0;
    for (size_t k = 0; k < got.size(); ++k) {
      norm += static_cast<double>(got[k]) * got[k];
      diff = std::max(diff, std::abs(static_cast<double>(got[k]) - want[k]));
    }
    EXPECT_NEAR(norm, 1.0, 1e-5);
    EXPECT_LT(diff, 1e-5) << texts[i];
  }
  EXPECT_EQ(j["usage"]["prompt_tokens"], tokens);
  const json c = post("/v1/completions", {{"prompt", "The capital of France is"}, {"max_tokens", 4}, {"temperature", 0}});
  EXPECT_EQ(c["object"], "text_completion");
  post("/v1/rerank", {{"query", "q"}, {"documents", {"d"}}}, 400);
}

}  // namespace
