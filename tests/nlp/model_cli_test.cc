// `spore logits --model PATH --ids ...`, run as tools run it: stdout is exactly a JSON array with
// one array of vocab float32 logits per input position, equal to transformers' references;
// --verbose adds the memory figures on stderr only; bad ids fail with a message and status 1.
#include <gtest/gtest.h>

#include <cstdio>

#include "model_test_util.h"

namespace spore::test::llm {
namespace {

const std::string kSpore = std::string(SPORE_BINARY_DIR) + "/bin/spore";

std::string run(const std::string& cmd, int* status) {
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  *status = WEXITSTATUS(pclose(p));
  return out;
}

std::string ids_arg(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) {
    if (!s.empty()) s += ',';
    s += std::to_string(id);
  }
  return s;
}

TEST(LogitsCli, PrintsEveryPositionsLogits) {
  for (const std::string family : {"llama", "qwen3"}) {
    for (bool gguf : {false, true}) {
      const Reference ref = load_reference(family);
      int status = 0;
      const std::string out = run(kSpore + " logits --model " + fixture_model(family, gguf).string() + " --ids " +
                                      ids_arg(ref.prompts[0]) + " 2>/dev/null",
                                  &status);
      ASSERT_EQ(status, 0) << out;
      const auto j = nlohmann::json::parse(out);
      const Tensor& want = ref.logits.at("logits_0");
      ASSERT_TRUE(j.is_array());
      ASSERT_EQ((int64_t)j.size(), want.size(0));
      const auto w = want.to_vector<float>();
      double worst = 0;
      for (size_t i = 0; i < j.size(); ++i) {
        ASSERT_EQ((int64_t)j[i].size(), want.size(1));
        for (size_t k = 0; k < j[i].size(); ++k)
          worst = std::max(worst, std::fabs(j[i][k].get<double>() - w[i * j[i].size() + k]));
      }
      EXPECT_LT(worst, 1e-4) << family << (gguf ? " gguf" : " hf");
    }
  }
}

TEST(LogitsCli, VerboseGoesToStderr) {
  int status = 0;
  const std::string model = fixture_model("qwen2", false).string();
  const std::string out = run(kSpore + " logits --verbose --model " + model + " --ids 1,2 2>/dev/null", &status);
  ASSERT_EQ(status, 0);
  EXPECT_TRUE(nlohmann::json::accept(out)) << out;
  const std::string err = run(kSpore + " logits --verbose --model " + model + " --ids 1,2 2>&1 >/dev/null", &status);
  EXPECT_NE(err.find("mapped"), std::string::npos) << err;
  EXPECT_NE(err.find("resident"), std::string::npos) << err;
}

TEST(LogitsCli, BadIdsFail) {
  int status = 0;
  const std::string model = fixture_model("qwen2", true).string();
  const std::string err = run(kSpore + " logits --model " + model + " --ids 1,999 2>&1", &status);
  EXPECT_NE(status, 0);
  EXPECT_NE(err.find("token id 999"), std::string::npos) << err;
  run(kSpore + " logits --model " + model + " --ids 1,x 2>&1", &status);
  EXPECT_NE(status, 0);
}

}  // namespace
}  // namespace spore::test::llm
