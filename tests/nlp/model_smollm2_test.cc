// The real SmolLM2-135M-Instruct (Q4_1 GGUF, llama arch: interleaved rope, quantized weights
// through matmul_q, a quantized tied embedding) when scripts/fetch-model.sh has fetched it;
// skipped otherwise. Greedy text must be sensible: "The capital of France is" -> " Paris".
#include <gtest/gtest.h>

#include "model_test_util.h"
#include "repack_test_util.h"

namespace spore::test::llm {
namespace {

std::filesystem::path smollm2() {
  return std::filesystem::path(SPORE_SOURCE_DIR) / "models" / "smollm2-135m-instruct";
}

TEST(SmolLM2, GreedyContinuationIsSensible) {
  if (!std::filesystem::exists(smollm2())) GTEST_SKIP() << "no " << smollm2() << " (bash scripts/fetch-model.sh)";
  nlp::LoadOptions o;
  o.require_tokenizer = true;
  const auto m = nlp::load_model(smollm2(), o);
  EXPECT_EQ(m.format, "gguf");
  EXPECT_EQ(m.lm->config().family, "llama");
  EXPECT_EQ(m.lm->config().num_layers, 30);
  EXPECT_TRUE(m.chat_template.has_value());
  const auto mem = m.lm->weight_memory();
  EXPECT_GT(mem.weights_mapped, 50u << 20);  // Q4_1 weights used in place
  // all of it: under ggml numerics (a GGUF's default) only q4_0 is repacked at load, as llama.cpp
  // does on x86, and this file has none (Q4_1, a Q8_0 embedding table; NOTE [Repacked weights])
  EXPECT_LT(mem.weights_resident - repacked_bytes(smollm2() / "SmolLM2-135M-Instruct.Q4_1.gguf", true), 1u << 20);
  const auto ids = m.tokenizer->encode("The capital of France is", false);
  const auto out = greedy(*m.lm, ids, 4, DType::kFloat16);
  const std::string text = m.tokenizer->decode(out);
  EXPECT_EQ(text.rfind(" Paris", 0), 0u) << "continuation: '" << text << "'";
}

TEST(SmolLM2, DefaultModelPath) {
  if (!std::filesystem::exists(smollm2())) GTEST_SKIP();
  unsetenv("SPORE_MODEL");
  EXPECT_EQ(std::filesystem::canonical(nlp::default_model_path()), std::filesystem::canonical(smollm2()));
  setenv("SPORE_MODEL", "/nonexistent/model.gguf", 1);
  try {
    nlp::default_model_path();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIO);
    EXPECT_NE(std::string(e.what()).find("fetch-model.sh"), std::string::npos);
  }
  unsetenv("SPORE_MODEL");
}

}  // namespace
}  // namespace spore::test::llm
