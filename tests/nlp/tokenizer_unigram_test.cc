// SentencePiece Unigram tokenizers (NOTE [Unigram tokenizers]): a T5-style model trained by
// `sentencepiece` (nmt_nfkc charsmap) in the two forms users have it, a GGUF written by llama.cpp's
// own convert_hf_to_gguf.py (vocabulary type "ugm") and transformers' tokenizer.json, encode each
// text as SentencePiece itself and Hugging Face `tokenizers` do (tests/fixtures/tokenizers/t5_ugm,
// tools/make_ugm_fixtures.py): full-width forms and ligatures folded by the charsmap, runs of
// spaces merged, characters outside the vocabulary as one unknown piece.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "nlp/tokenizer/unigram.h"
#include "spore/error.h"
#include "spore/gguf.h"
#include "spore/nlp/tokenizer.h"
#include "test_util.h"

namespace spore::test {
namespace {

namespace fs = std::filesystem;
const fs::path kDir = fs::path(SPORE_SOURCE_DIR) / "tests" / "fixtures" / "tokenizers" / "t5_ugm";

nlohmann::json cases() { return nlohmann::json::parse(std::ifstream(kDir / "cases.json"))["cases"]; }

TEST(UnigramTokenizer, GgufFromLlamaCppsConverterEncodesAsSentencePiece) {
  const GgufFile g(kDir / "model.gguf");
  ASSERT_EQ(g.get_string("tokenizer.ggml.model"), "t5");
  const nlp::Tokenizer tok = nlp::Tokenizer::from_gguf(g);
  int n = 0;
  for (const auto& c : cases()) {
    const std::string text = c["text"];
    EXPECT_EQ(tok.encode(text, false), c["spm_ids"].get<std::vector<int32_t>>()) << text;
    ++n;
  }
  EXPECT_GE(n, 10);
  EXPECT_EQ(tok.decode(tok.encode("Hello world", false)), "Hello world");
}

TEST(UnigramTokenizer, TokenizerJsonEncodesAsHuggingFace) {
  const nlp::Tokenizer tok = nlp::Tokenizer::from_file(kDir / "tokenizer.json");
  for (const auto& c : cases()) {
    const std::string text = c["text"];
    EXPECT_EQ(tok.encode(text, false), c["hf_ids"].get<std::vector<int32_t>>()) << text;
  }
}

// The charsmap is read from the file: every size and offset is checked, never trusted.
TEST(UnigramTokenizer, BrokenCharsmapsAreFormatErrors) {
  using nlp::detail::PrecompiledCharsmap;
  expect_error([] { PrecompiledCharsmap(std::string("ab"), "t"); }, ErrorCode::kFormat, "charsmap");
  std::string huge("\xff\xff\x00\x00", 4);
  expect_error([&] { PrecompiledCharsmap(huge + "abcd", "t"); }, ErrorCode::kFormat, "double array");
  // A one-unit array whose root points far outside it: a typed error when used, no read past it.
  std::string blob("\x04\x00\x00\x00", 4);
  blob += std::string("\x00\xfc\xff\x7f", 4);
  const PrecompiledCharsmap bad(blob, "t");
  expect_error([&] { (void)bad.normalize("abc"); }, ErrorCode::kFormat, "outside");
  EXPECT_FALSE(nlp::detail::base64_decode("a$==").has_value());
  EXPECT_EQ(nlp::detail::base64_decode("aGk="), std::optional<std::string>("hi"));
}

}  // namespace
}  // namespace spore::test
