// Per-model workers (NOTE [Many models]): `spore serve` with SmolLM2 (skipped without it) and a
// tiny fixture decoder. While SmolLM2 runs a long prefill (400 prompt tokens in one engine step,
// --prefill-chunk 1024), a 20-token stream from the tiny model starts and finishes: each model has
// its own queue and engine thread, so one model's prefill never holds up another's steps. With
// one worker for both (tried: a mutex around every worker's step), the tiny stream's steps wait
// for the prefill's step, and it ends after the long request's first token.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <future>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "serve/model_catalog.h"
#include "serve/raw_http.h"
#include "serve/serve_test_util.h"

namespace {

using nlohmann::json;
using namespace spore::test;
using namespace std::chrono_literals;

const std::string kTiny = std::string(SPORE_SOURCE_DIR) + "/tests/fixtures/serve/tiny-llama.gguf";

class ServeManyModels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_model()) GTEST_SKIP() << "no model at " << model_path() << " (scripts/fetch-model.sh fetches it)";
    port_ = free_port();
    pid_ = start_serve({"--model", model_path().string(), "--model", kTiny, "--port", std::to_string(port_), "--slots",
                        "1", "--threads", "2", "--ctx", "1024", "--prefill-chunk", "1024"});
    ASSERT_TRUE(wait_until_healthy(port_, 60));
  }
  void TearDown() override {
    if (pid_ > 0) {
      const int status = stop_serve(pid_);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    }
  }
  httplib::Result post(const json& body) {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(300, 0);
    return c.Post("/v1/completions", body.dump(), "application/json");
  }
  // Requests queued or running, from one scrape.
  double in_flight() {
    httplib::Client c("127.0.0.1", port_);
    auto r = c.Get("/metrics");
    std::smatch m;
    const std::string text = r ? r->body : "";
    double n = 0;
    for (const char* g : {"spore_active_slots", "spore_queue_depth"})
      if (std::regex_search(text, m, std::regex(std::string("\n") + g + " ([0-9.e+-]+)\n"))) n += std::stod(m[1]);
    return n;
  }
  pid_t pid_ = -1;
  int port_ = 0;
};

TEST_F(ServeManyModels, ALongPrefillOnOneModelDoesNotHoldUpAnother) {
  const std::string big = spore::serve::model_name_for_path(model_path());
  // Both loaded first (the tiny one on its first request, the other at start-up).
  auto warm = post({{"model", "tiny-llama"}, {"prompt", "ab"}, {"max_tokens", 2}});
  ASSERT_TRUE(warm);
  ASSERT_EQ(warm->status, 200) << warm->body;
  std::string prompt;
  for (int i = 0; i < 400; ++i) prompt += "word ";
  using Clock = std::chrono::steady_clock;
  const Clock::time_point long_sent = Clock::now();
  auto long_prefill = std::async(std::launch::async, [&] {
    return post({{"model", big}, {"prompt", prompt}, {"max_tokens", 1}});
  });
  // Wait until it is submitted (queued for its one prefill step, or in it), then stream from the
  // tiny model. The tiny model's requests are done, so the gauges count the long one only.
  bool started = false;
  for (int i = 0; i < 3000 && !started; ++i) {
    started = in_flight() >= 1;
    if (!started) std::this_thread::sleep_for(5ms);
  }
  ASSERT_TRUE(started) << "the long request never showed in the gauges";
  httplib::Client c("127.0.0.1", port_);
  c.set_read_timeout(60, 0);
  auto r = c.Post("/v1/completions",
                  json{{"model", "tiny-llama"}, {"prompt", "ab"}, {"max_tokens", 20}, {"ignore_eos", true}, {"stream", true}}.dump(),
                  "application/json");
  const double tiny_done_ms = std::chrono::duration<double, std::milli>(Clock::now() - long_sent).count();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_NE(r->body.find("data: [DONE]"), std::string::npos) << r->body;
  auto big_answer = long_prefill.get();
  ASSERT_TRUE(big_answer);
  ASSERT_EQ(big_answer->status, 200) << big_answer->body;
  // The long request's first token came first_token_ms after the server queued it, which was
  // after it was sent: so its prefill step ended no sooner than long_sent + first_token_ms. The
  // tiny stream (20 steps of its own model) ended before that, inside the one prefill step.
  const double prefill_end_ms = json::parse(big_answer->body)["timings"]["first_token_ms"].get<double>();
  EXPECT_LT(tiny_done_ms, prefill_end_ms) << "the tiny model's stream waited for the other model's prefill step ("
                                          << tiny_done_ms << " ms after the long request was sent; its first token "
                                          << prefill_end_ms << " ms after it was queued)";
}

}  // namespace
