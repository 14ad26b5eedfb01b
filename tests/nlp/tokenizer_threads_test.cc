// One Tokenizer shared by several threads (the word cache is mutex-guarded, PCRE2's match data
// is per thread): concurrent encodes give the same ids as one thread.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <thread>

#include "spore/nlp/tokenizer.h"

namespace {

TEST(TokenizerThreads, ConcurrentEncodesMatchOneThread) {
  const std::string dir = std::string(SPORE_SOURCE_DIR) + "/tests/fixtures/tokenizers/";
  std::ifstream in(dir + "qwen3_cases.json");
  const auto fixture = nlohmann::json::parse(in);
  std::vector<std::string> texts;
  std::vector<std::vector<int32_t>> want;
  for (const auto& c : fixture["cases"]) {
    if (c["add_special_tokens"].get<bool>()) continue;
    texts.push_back(c["text"]);
    want.push_back(c["ids"].get<std::vector<int32_t>>());
  }
  const spore::nlp::Tokenizer tok = spore::nlp::Tokenizer::from_file(dir + "qwen3");
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 3; ++round)
        for (size_t k = 0; k < texts.size(); ++k) {
          const size_t i = (k * 7 + t * 13 + round) % texts.size();  // different orders
          if (tok.encode(texts[i]) != want[i]) ++mismatches[t];
        }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

}  // namespace
