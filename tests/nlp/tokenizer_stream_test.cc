// Streaming detokenisation: fed one id at a time, the pieces concatenate to the full decode and
// never carry a U+FFFD the full decode lacks; through byte-level BPE (Qwen3, where one token may
// hold part of a character) and SentencePiece byte fallback (Mistral, Llama 2 GGUF, where one
// character may take several <0xNN> ids).
#include <gtest/gtest.h>

#include "spore/error.h"
#include "spore/nlp/tokenizer.h"

namespace {

using spore::nlp::StreamDecoder;
using spore::nlp::Tokenizer;
const std::string kDir = std::string(SPORE_SOURCE_DIR) + "/tests/fixtures/tokenizers/";
const std::string kFffd = "\xEF\xBF\xBD";

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

const std::vector<std::string>& texts() {
  static const std::vector<std::string> t = {
      "深度学习框架在昇腾处理器上运行大模型。",
      "日本語のテキストとカタカナ、ひらがな、漢字。",
      "👨‍👩‍👧‍👦 family 🇯🇵🇺🇸 flags 👍🏽👋🏿 tones",
      "Mixed 中文 and English, 한국어, العربية, हिन्दी 🦙🤗",
      "𝕏 𐍈 🧑‍💻 e\u0301",
      "plain ascii text with  spaces\n\tand tabs",
  };
  return t;
}

void check_stream(const Tokenizer& tok, const std::vector<int32_t>& ids, bool* saw_partial) {
  const std::string full = tok.decode(ids);
  StreamDecoder stream(tok);
  std::string joined;
  for (int32_t id : ids) {
    const std::string piece = stream.push(id);
    // No U+FFFD beyond those in the full decode, in any piece.
    EXPECT_EQ(count(piece, kFffd), 0u) << "piece '" << piece << "' of '" << full << "'";
    if (piece.empty()) *saw_partial = true;
    joined += piece;
  }
  joined += stream.finish();
  EXPECT_EQ(joined, full);
}

TEST(TokenizerStream, ByteLevelQwen3) {
  const Tokenizer tok = Tokenizer::from_file(kDir + "qwen3");
  bool partial = false;
  for (const std::string& t : texts()) check_stream(tok, tok.encode(t), &partial);
  EXPECT_TRUE(partial);  // some token ended inside a character and was held back
}

TEST(TokenizerStream, ByteFallbackMistralAndLlama2) {
  for (const std::string& path : {kDir + "mistral", kDir + "llama2-gguf/ggml-vocab-llama-spm.gguf"}) {
    const Tokenizer tok = Tokenizer::from_file(path);
    bool partial = false;
    int byte_ids = 0;
    for (const std::string& t : texts()) {
      const auto ids = tok.encode(t, true);
      for (int32_t id : ids) byte_ids += tok.id_to_token(id).rfind("<0x", 0) == 0;
      check_stream(tok, ids, &partial);
    }
    EXPECT_GT(byte_ids, 10) << path;  // emoji and rare CJK do go through <0xNN> ids
    EXPECT_TRUE(partial) << path;
  }
}

TEST(TokenizerStream, IncompleteEndDecodesAsTheFullDecode) {
  const Tokenizer tok = Tokenizer::from_file(kDir + "mistral");
  // The first two of the three bytes of 你 (E4 BD A0), then the stream ends.
  const std::vector<int32_t> ids = {*tok.token_to_id("<0xE4>"), *tok.token_to_id("<0xBD>")};
  StreamDecoder stream(tok);
  EXPECT_EQ(stream.push(ids[0]), "");
  EXPECT_EQ(stream.push(ids[1]), "");
  EXPECT_EQ(stream.finish(), tok.decode(ids));
  EXPECT_EQ(tok.decode(ids), kFffd + kFffd);  // Hugging Face: one U+FFFD per byte token
  EXPECT_EQ(stream.push(*tok.token_to_id("<0xE4>")), "");  // reset: a new stream
  EXPECT_EQ(stream.push(*tok.token_to_id("<0xBD>")), "");
  EXPECT_EQ(stream.push(*tok.token_to_id("<0xA0>")), "你");
}

TEST(TokenizerStream, OutOfVocabularyIdIsAnError) {
  const Tokenizer tok = Tokenizer::from_file(kDir + "mistral");
  StreamDecoder stream(tok);
  EXPECT_THROW(stream.push(32000), spore::Error);
  EXPECT_EQ(stream.push(22557), "Hello");
}

}  // namespace
