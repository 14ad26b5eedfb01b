// Bad input to the tokenizers: invalid UTF-8 (kValue naming the byte offset, or replaced on
// request as Hugging Face does), ids outside the vocabulary (naming the id and the size), and
// malformed tokenizer.json files (kFormat / kUnsupported naming the field).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "spore/error.h"
#include "test_util.h"
#include "spore/nlp/tokenizer.h"

namespace {

using spore::ErrorCode;
using spore::nlp::Tokenizer;
const std::string kDir = std::string(SPORE_SOURCE_DIR) + "/tests/fixtures/tokenizers/";

using spore::test::expect_error;  // the suite's one (tests/test_util.h)

nlohmann::json tiny_json() {
  std::ifstream in(kDir + "tiny/tokenizer.json");
  return nlohmann::json::parse(in);
}

TEST(TokenizerErrors, InvalidUtf8NamesTheOffsetOrIsReplaced) {
  const Tokenizer tok = Tokenizer::from_file(kDir + "qwen3");
  expect_error([&] { tok.encode("ab\xC3(x"); }, ErrorCode::kValue, "byte offset 2");
  expect_error([&] { tok.encode("\xED\xA0\x80"); }, ErrorCode::kValue, "byte offset 0");  // surrogate
  expect_error([&] { tok.encode("ok\xF4\x90\x80\x80"); }, ErrorCode::kValue, "byte offset 2");  // > U+10FFFF
  spore::nlp::EncodeOptions o;
  o.replace_invalid_utf8 = true;
  // from_utf8_lossy: one U+FFFD per maximal invalid subpart.
  EXPECT_EQ(tok.encode("ab\xE4\xBD(x", o), tok.encode("ab\xEF\xBF\xBD(x"));
  EXPECT_EQ(tok.encode("\xFF\xFE", o), tok.encode("\xEF\xBF\xBD\xEF\xBF\xBD"));
}

TEST(TokenizerErrors, IdOutsideTheVocabulary) {
  const Tokenizer tok = Tokenizer::from_file(kDir + "mistral");
  EXPECT_EQ(tok.vocab_size(), 32000);
  const std::vector<int32_t> ids = {1, 32000};
  expect_error([&] { tok.decode(ids); }, ErrorCode::kValue, "token id 32000 is outside the vocabulary of 32000");
  const std::vector<int32_t> neg = {-1};
  expect_error([&] { tok.decode(neg); }, ErrorCode::kValue, "token id -1");
}

TEST(TokenizerErrors, MalformedFilesNameTheField) {
  auto load = [](const nlohmann::json& j) { return Tokenizer::from_json(j.dump(), "bad.json"); };
  EXPECT_NO_THROW(load(tiny_json()));
  expect_error([&] { Tokenizer::from_json("{\"model\": ", "bad.json"); }, ErrorCode::kFormat, "not valid JSON");
  expect_error([&] { Tokenizer::from_json("[1]", "bad.json"); }, ErrorCode::kFormat, "JSON object");
  auto j = tiny_json();
  j["model"]["type"] = "WordLevel";
  expect_error([&] { load(j); }, ErrorCode::kUnsupported, "model type 'WordLevel'");
  j["model"]["type"] = "Unigram";  // with BPE's vocabulary object
  expect_error([&] { load(j); }, ErrorCode::kFormat, "'model.vocab' must be an array");
  j["model"]["vocab"] = nlohmann::json::array({nlohmann::json::array({"a", "not a score"})});
  expect_error([&] { load(j); }, ErrorCode::kFormat, "model.vocab[0]", "[piece, score]");
  j = tiny_json();
  j.erase("model");
  expect_error([&] { load(j); }, ErrorCode::kFormat, "'tokenizer.model' is missing");
  j = tiny_json();
  j["model"].erase("vocab");
  expect_error([&] { load(j); }, ErrorCode::kFormat, "'model.vocab' is missing");
  j = tiny_json();
  j["model"]["merges"][3] = nlohmann::json::array({"zzz-not-a-token", "a"});
  expect_error([&] { load(j); }, ErrorCode::kFormat, "model.merges[3]");
  j = tiny_json();
  j["model"]["merges"][0] = "onlyone";
  expect_error([&] { load(j); }, ErrorCode::kFormat, "model.merges[0]");
  j = tiny_json();
  j["model"]["vocab"]["x"] = "seven";
  expect_error([&] { load(j); }, ErrorCode::kFormat, "model.vocab.x");
  j = tiny_json();
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(unclosed";
  expect_error([&] { load(j); }, ErrorCode::kFormat, "pre_tokenizer.pretokenizers[0].pattern.Regex");
  j = tiny_json();
  j["normalizer"] = {{"type", "Nmt"}};  // Hugging Face's NMT control-character rules: not implemented
  expect_error([&] { load(j); }, ErrorCode::kUnsupported, "normalizer type 'Nmt'");
  j = tiny_json();
  j["normalizer"] = {{"type", "Precompiled"}, {"precompiled_charsmap", "not base64!"}};
  expect_error([&] { load(j); }, ErrorCode::kFormat, "normalizer.precompiled_charsmap");
  j = tiny_json();
  j["normalizer"] = {{"type", "BertNormalizer"}, {"lowercase", "yes"}};
  expect_error([&] { load(j); }, ErrorCode::kFormat, "normalizer.lowercase");
  j = tiny_json();
  j["decoder"] = {{"type", "Sequence"}, {"decoders", {{{"type", "Strip"}, {"content", 5}}}}};
  expect_error([&] { load(j); }, ErrorCode::kFormat, "decoder.decoders[0].content");
  j = tiny_json();
  j["model"]["vocab"]["x"] = 1 << 30;  // sparse: ids index dense tables
  expect_error([&] { load(j); }, ErrorCode::kFormat, "model.vocab.x' is 1073741824, outside 0..");
  j = tiny_json();
  j["added_tokens"][0]["id"] = -3;
  expect_error([&] { load(j); }, ErrorCode::kFormat, "added_tokens[0].id");
  j = tiny_json();
  j["post_processor"]["single"][0] = {{"SpecialToken", {{"id", "<nope>"}, {"type_id", 0}}}};
  expect_error([&] { load(j); }, ErrorCode::kFormat, "post_processor.special_tokens.<nope>");
  expect_error([&] { Tokenizer::from_file(kDir + "no-such-dir/tokenizer.json"); }, ErrorCode::kIO, "no-such-dir");
}

}  // namespace
