// `spore serve --lora` (NOTE [LoRA adapters]) with llama-server's conventions, on the tiny llama
// fixture's GGUF (it carries a stand-in tokenizer) and the adapters of tools/make_lora_fixtures.py:
// GET /lora-adapters lists ids, paths and global scales; a request's "lora" picks adapters and
// scales, unlisted ones off; without the field the global scales apply; POST /lora-adapters
// changes them; bad ids are 400s naming the field. Each answer is the library's generate() with
// the same adapters (whose numbers tests/nlp/lora_test.cc holds to PEFT's merged model).
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "serve/raw_http.h"
#include "serve/serve_test_util.h"
#include "spore/nlp/generate.h"
#include "spore/nlp/lora.h"
#include "spore/serve.h"

namespace spore::test {
namespace {

using json = nlohmann::json;

std::filesystem::path src(const std::string& rel) { return std::filesystem::path(SPORE_SOURCE_DIR) / rel; }
const std::string kModel = "tests/fixtures/llm/llama/model-llama-cpp.gguf";
const std::string kPrompt = "The quick brown fox";

class ServeLora : public ::testing::Test {
 protected:
  static inline pid_t pid = -1;
  static inline int port = 0;

  static void SetUpTestSuite() {
    port = free_port();
    pid = start_serve({"--model", src(kModel).string(), "--port", std::to_string(port), "--ctx", "64", "--slots", "2",
                       "--threads", "1", "--lora", src("tests/fixtures/lora/a.gguf").string(), "--lora",
                       src("tests/fixtures/lora/b").string() + ":0.5"});
    if (!wait_until_healthy(port, 60)) ADD_FAILURE() << "spore serve did not become healthy in 60 s";
  }
  static void TearDownTestSuite() {
    const int status = stop_serve(pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }

  json get(const std::string& path) {
    httplib::Client c("127.0.0.1", port);
    auto r = c.Get(path.c_str());
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
    return r ? json::parse(r->body) : json();
  }
  std::pair<int, json> post(const std::string& path, const json& body) {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(60, 0);
    auto r = c.Post(path.c_str(), body.dump(), "application/json");
    if (!r) return {0, json()};
    return {r->status, json::parse(r->body)};
  }
  // The greedy completion of kPrompt as the server gives it; `lora` null: no "lora" field.
  std::string complete(const json& lora) {
    json body = {{"prompt", kPrompt}, {"max_tokens", 8}, {"temperature", 0}, {"ignore_eos", true}};
    if (!lora.is_null()) body["lora"] = lora;
    const auto [status, j] = post("/v1/completions", body);
    EXPECT_EQ(status, 200) << j.dump();
    return j["choices"][0]["text"].get<std::string>();
  }
};

// The library's greedy text with `uses` (adapters loaded by the test, as the server loads them).
std::string library(const std::vector<std::pair<std::string, double>>& uses) {
  static const nlp::LoadedModel m = nlp::load_model(src(kModel), {.require_tokenizer = true});
  nlp::GenerateOptions o;
  o.max_tokens = 8;
  o.sampling.temperature = 0;
  o.ignore_eos = true;
  for (const auto& [path, scale] : uses) o.lora.push_back({nlp::load_lora(src(path), m), scale});
  // The prompt's ids as /v1/completions encodes them (completions.cc).
  return nlp::generate_ids(m, m.tokenizer->encode(kPrompt), o).text;
}

TEST_F(ServeLora, ListsPicksAndScalesAdapters) {
  const json list = get("/lora-adapters");
  ASSERT_EQ(list.size(), 2u) << list.dump();
  EXPECT_EQ(list[0]["id"], 0);
  EXPECT_EQ(list[0]["path"], src("tests/fixtures/lora/a.gguf").string());
  EXPECT_EQ(list[0]["scale"], 1.0);
  EXPECT_EQ(list[1]["id"], 1);
  EXPECT_EQ(list[1]["scale"], 0.5);

  const std::string plain = library({}), with_a = library({{"tests/fixtures/lora/a.gguf", 1.0}});
  ASSERT_NE(plain, with_a) << "the adapter must change the greedy text for this test to mean anything";
  EXPECT_EQ(complete(json::array()), plain);                                     // listed none: all off
  EXPECT_EQ(complete({{{"id", 0}, {"scale", 1.0}}}), with_a);                     // b unlisted: off
  EXPECT_EQ(complete({{{"id", 1}, {"scale", 0.25}}}), library({{"tests/fixtures/lora/b", 0.25}}));
  // No field: the global scales, both adapters at once.
  EXPECT_EQ(complete(nullptr), library({{"tests/fixtures/lora/a.gguf", 1.0}, {"tests/fixtures/lora/b", 0.5}}));
  // POST sets the global scales (unlisted: 0).
  const auto [status, ok] = post("/lora-adapters", json::array({{{"id", 1}, {"scale", 2.0}}}));
  EXPECT_EQ(status, 200) << ok.dump();
  const json after = get("/lora-adapters");
  EXPECT_EQ(after[0]["scale"], 0.0);
  EXPECT_EQ(after[1]["scale"], 2.0);
  EXPECT_EQ(complete(nullptr), library({{"tests/fixtures/lora/b", 2.0}}));
}

TEST_F(ServeLora, BadAdapterListsAre400s) {
  const std::pair<json, std::string> cases[] = {
      {json{{{"id", 2}, {"scale", 1}}}, "lora[0].id"},
      {json{{{"id", 0}, {"scale", 1}}, {{"id", 0}, {"scale", 2}}}, "lora[1].id"},
      {json{{{"id", 0}}}, "lora[0].scale"},
      {json("all"), "lora"},
  };
  for (const auto& [lora, param] : cases) {
    const auto [status, j] = post("/v1/completions", {{"prompt", kPrompt}, {"max_tokens", 2}, {"lora", lora}});
    EXPECT_EQ(status, 400) << lora.dump();
    EXPECT_EQ(j["error"]["param"], param) << j.dump();
  }
  const auto [status, j] = post("/lora-adapters", json::array({{{"id", 9}, {"scale", 1}}}));
  EXPECT_EQ(status, 400) << j.dump();
}

// An adapter belongs to one base: with several models --lora is refused when the server is made,
// naming the option (NOTE [LoRA adapters]).
TEST(ServeLoraOptions, SeveralModelsRefuseAdapters) {
  serve::ServeOptions o;
  o.model = src(kModel).string();
  o.more_models = {src("tests/fixtures/serve/tiny-qwen2.gguf").string()};
  o.lora = {src("tests/fixtures/lora/a.gguf").string()};
  try {
    serve::Server s(o);
    ADD_FAILURE() << "two models with --lora were accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kValue) << e.what();
    EXPECT_NE(std::string(e.what()).find("--lora"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace spore::test
