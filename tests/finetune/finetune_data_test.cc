// Fine-tuning data (NOTE [Fine-tuning data]): JSONL records of both forms, the loss masks the chat
// template and the prompt/completion form imply (checked by decoding the target tokens back to the
// text the template definition says the assistant turn renders to), truncation and skipping
// counted, and every kind of bad input a kFormat error naming the file and line.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "spore/error.h"
#include "spore/nlp/chat_template.h"
#include "spore/nlp/finetune.h"
#include "spore/nlp/tokenizer.h"

namespace spore::test {
namespace {

namespace fs = std::filesystem;
const fs::path kTok = fs::path(SPORE_SOURCE_DIR) / "tests/fixtures/convert/llama";

std::string error_of(const std::string& text) {
  try {
    nlp::parse_jsonl(text, "data.jsonl");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFormat) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << text;
  return "";
}

TEST(FinetuneData, BadLinesAreNamedByFileAndLine) {
  const std::string ok = R"({"prompt": "a", "completion": "b"})";
  std::string e = error_of(ok + "\n" + ok + "\n{\"prompt\": \"a\", \"completion\": \n");
  EXPECT_NE(e.find("data.jsonl:3:"), std::string::npos) << e;
  EXPECT_NE(e.find("not valid JSON"), std::string::npos) << e;
  e = error_of(ok + "\n" + R"({"messages": [{"role": "user", "content": "hi"}]})");
  EXPECT_NE(e.find("data.jsonl:2:"), std::string::npos) << e;
  EXPECT_NE(e.find("no assistant turn"), std::string::npos) << e;
  e = error_of("\n\n" + ok + "\n" + "{\"prompt\": \"caf\xe9\", \"completion\": \"x\"}\n");
  EXPECT_NE(e.find("data.jsonl:4:"), std::string::npos) << e;
  EXPECT_NE(e.find("not UTF-8"), std::string::npos) << e;
  EXPECT_NE(e.find("0xe9"), std::string::npos) << e;
  e = error_of("[1, 2]");
  EXPECT_NE(e.find("data.jsonl:1: a record must be a JSON object"), std::string::npos) << e;
  e = error_of(R"({"text": "x"})");
  EXPECT_NE(e.find("\"messages\""), std::string::npos) << e;
  e = error_of(R"({"prompt": "x"})");
  EXPECT_NE(e.find("\"completion\" must be a string"), std::string::npos) << e;
  e = error_of(R"({"messages": [{"role": "assistant"}]})");
  EXPECT_NE(e.find("message 0 has no string \"content\""), std::string::npos) << e;
  e = error_of(std::string(100, '[') + std::string(100, ']'));
  EXPECT_NE(e.find("deeper than"), std::string::npos) << e;
  e = error_of("\n  \n");
  EXPECT_NE(e.find("no records"), std::string::npos) << e;
  // A surrogate encoded in UTF-8 and an overlong form are not UTF-8 either.
  EXPECT_NE(error_of("{\"prompt\": \"\xed\xa0\x80\", \"completion\": \"x\"}").find("not UTF-8"), std::string::npos);
  EXPECT_NE(error_of("{\"prompt\": \"\xc0\xaf\", \"completion\": \"x\"}").find("not UTF-8"), std::string::npos);
}

TEST(FinetuneData, BothFormsParseWithBlankLinesAndCrlf) {
  const auto r = nlp::parse_jsonl(
      "{\"prompt\": \"a\", \"completion\": \"b\"}\r\n\n"
      R"({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "r"}]})",
      "d.jsonl");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].line, 1);
  EXPECT_EQ(r[0].completion, "b");
  EXPECT_EQ(r[1].line, 3);
  EXPECT_FALSE(r[1].messages_json.empty());
}

std::string targets_text(const nlp::TrainExample& ex, const nlp::Tokenizer& tok) {
  std::vector<int32_t> t;
  for (size_t i = 0; i < ex.ids.size(); ++i)
    if (ex.target[i]) t.push_back(ex.ids[i]);
  return tok.decode(t);
}

TEST(FinetuneData, LossMasksCoverTheAssistantTurnsAndTheCompletion) {
  const nlp::Tokenizer tok = nlp::Tokenizer::from_file(kTok / "tokenizer.json");
  const nlp::ChatTemplate tpl = nlp::ChatTemplate::load(kTok / "tokenizer_config.json");
  const auto records = nlp::parse_jsonl(
      R"({"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "capital of France?"}, {"role": "assistant", "content": "Paris"}, {"role": "user", "content": "and Italy?"}, {"role": "assistant", "content": "Rome"}]})"
      "\n"
      R"({"prompt": "two plus two is", "completion": " four"})",
      "d.jsonl");
  nlp::DataReport rep;
  const auto ex = nlp::tokenize_records(records, tok, &tpl, {}, "d.jsonl", rep);
  ASSERT_EQ(ex.size(), 2u);
  // The fixture's template renders a turn as <|im_start|>role\ncontent<|im_end|>\n, and the
  // generation prompt as <|im_start|>assistant\n: the targets are each reply and its end.
  EXPECT_EQ(targets_text(ex[0], tok), "Paris<|im_end|>\nRome<|im_end|>\n");
  EXPECT_EQ(tok.decode(ex[0].ids), tpl.render(records[0].messages_json));
  const std::string eos = tok.eos_id() ? tok.decode(std::vector<int32_t>{*tok.eos_id()}) : "";
  EXPECT_EQ(targets_text(ex[1], tok), " four" + eos);
  EXPECT_EQ(rep.records, 2);
  EXPECT_EQ(rep.examples, 2);
  EXPECT_EQ(ex[1].source_line, 2);

  // Over-long examples: truncated (counted) or skipped (counted); one cut to no target is skipped.
  nlp::DataOptions o;
  o.max_tokens = static_cast<int64_t>(ex[0].ids.size()) - 2;
  nlp::DataReport cut;
  const auto truncated = nlp::tokenize_records(records, tok, &tpl, o, "d.jsonl", cut);
  EXPECT_EQ(cut.truncated, 1);
  ASSERT_EQ(truncated.size(), 2u);
  EXPECT_EQ(static_cast<int64_t>(truncated[0].ids.size()), o.max_tokens);
  o.skip_long = true;
  nlp::DataReport skip;
  EXPECT_EQ(nlp::tokenize_records(records, tok, &tpl, o, "d.jsonl", skip).size(), 1u);
  EXPECT_EQ(skip.skipped_long, 1);
  o = {};
  o.max_tokens = 3;  // the prompt alone is longer: nothing to learn is left
  nlp::DataReport none;
  EXPECT_TRUE(nlp::tokenize_records({records[1]}, tok, &tpl, o, "d.jsonl", none).empty());
  EXPECT_EQ(none.skipped_long, 1);

  // A chat record for a model without a template names the line and the way out.
  try {
    nlp::tokenize_records(records, tok, nullptr, {}, "d.jsonl", rep);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("d.jsonl:1:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("prompt/completion"), std::string::npos) << e.what();
  }
}

TEST(FinetuneData, LoraTargetsAreChecked) {
  EXPECT_EQ(nlp::parse_lora_targets("q_proj, v_proj,q_proj"), (std::vector<std::string>{"q_proj", "v_proj"}));
  EXPECT_EQ(nlp::parse_lora_targets("all").size(), 7u);
  try {
    nlp::parse_lora_targets("q_proj,qkv");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kValue);
    EXPECT_NE(std::string(e.what()).find("'qkv'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace spore::test
