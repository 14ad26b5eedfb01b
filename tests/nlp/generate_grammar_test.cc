// Generation under grammars (NOTE [Grammars]) with a random-weight model (the qwen2 family's tiny
// fixture, tools/make_llm_fixtures.py) and a small byte-level tokenizer: every output under 30
// JSON Schemas is validated by python3-jsonschema (tests/nlp/grammar/check_outputs.py), GBNF
// outputs are checked against std::regex, and a dead end ends the sequence.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <regex>

#include "model_test_util.h"
#include "test_util.h"
#include "spore/nlp/generate.h"
#include "spore/nlp/grammar.h"

namespace spore::nlp {
namespace {

const std::string kSource = SPORE_SOURCE_DIR;

// The random-weight model (vocabulary 256) with tiny_smollm's tokenizer, whose ids 0..255 are its
// two special tokens and the byte-level alphabet: every byte can be written.
// Its config allows 64 positions; a copy allows 1024 (rope works at any position), so that JSON
// with several fields fits.
LoadedModel random_model() {
  // One copy per process: ctest runs tests in parallel, and rewriting a file another process has
  // mapped is a SIGBUS there.
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / ("grammar_qwen2_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path src = spore::test::llm::fixture_model("qwen2", false);
  for (const auto& e : std::filesystem::directory_iterator(src))
    std::filesystem::copy_file(e.path(), dir / e.path().filename(), std::filesystem::copy_options::overwrite_existing);
  nlohmann::json config = nlohmann::json::parse(std::ifstream(dir / "config.json"));
  config["max_position_embeddings"] = 1024;
  std::ofstream(dir / "config.json") << config.dump();
  LoadedModel m = load_model(dir);
  std::filesystem::remove_all(dir);  // the mapped weights stay readable after the unlink
  m.tokenizer = Tokenizer::from_file(kSource + "/tests/fixtures/tokenizers/tiny_smollm");
  return m;
}

GenerateOptions sampled(uint64_t seed, std::shared_ptr<const Grammar> g) {
  GenerateOptions o;
  o.max_tokens = 600;
  o.sampling.temperature = 1.0;
  o.sampling.seed = seed;
  o.eos_ids = {0};  // <|endoftext|>
  o.apply_model_defaults = false;
  o.grammar = std::move(g);
  return o;
}

TEST(GenerateGrammar, ThirtySchemasValidateUnderAnIndependentValidator) {
  const LoadedModel m = random_model();
  std::ifstream f(kSource + "/tests/nlp/grammar/schemas.json");
  const nlohmann::ordered_json schemas = nlohmann::ordered_json::parse(f);
  ASSERT_EQ(schemas.size(), 30u);
  JsonSchemaOptions jo;
  jo.default_max_string_chars = 12;  // unbounded strings would run on under random weights
  const std::string out_path = ::testing::TempDir() + "/grammar_outputs_" + std::to_string(getpid()) + ".jsonl";
  std::ofstream out(out_path);
  for (size_t i = 0; i < schemas.size(); ++i) {
    const auto g = Grammar::from_gbnf(json_schema_to_gbnf(schemas[i].dump(), jo));
    GenerateOptions o = sampled(100 + i, g);
    // Without filters the engine keeps an unmasked draw the grammar allows (rejection sampling);
    // a top-k takes the masked path at every step. Both must stay inside the schema.
    if (i % 3 == 2) o.sampling.top_k = 40;
    const GenerationResult r = generate_ids(m, {3, 4, 5}, o);
    std::string toks;
    for (int32_t t : r.tokens) toks += std::to_string(t) + ":" + m.tokenizer->decode(std::vector<int32_t>{t}) + " ";
    EXPECT_EQ(r.finish, FinishReason::kStop) << "schema " << i << ": " << r.text << " tokens " << toks;
    out << nlohmann::ordered_json{{"schema", schemas[i]}, {"output", r.text}}.dump() << "\n";
  }
  out.close();
  const std::string cmd = "/usr/bin/python3 " + kSource + "/tests/nlp/grammar/check_outputs.py " + out_path;
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << cmd;
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "python3-jsonschema is not installed";
  EXPECT_EQ(WEXITSTATUS(status), 0) << cmd;
}

TEST(GenerateGrammar, GbnfOutputsMatchTheEquivalentRegex) {
  const LoadedModel m = random_model();
  const auto g = Grammar::from_gbnf(R"(root ::= ("yes" | "no" | [0-9]{1,3}) ("," [a-c]+){0,3} "."
)");
  const std::regex r("(yes|no|[0-9]{1,3})(,[a-c]+){0,3}\\.");
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    GenerateOptions o = sampled(seed, g);
    o.ignore_eos = true;  // the end comes from the grammar: "." completes it and nothing may follow
    const GenerationResult r2 = generate_ids(m, {7, 8}, o);
    EXPECT_TRUE(std::regex_match(r2.text, r)) << r2.text;
    EXPECT_EQ(r2.finish, FinishReason::kStop);
    EXPECT_GT(r2.timings.grammar_ms, 0.0);  // the grammar's share of the decode is reported
  }
  GenerateOptions free = sampled(1, nullptr);
  free.max_tokens = 4;
  EXPECT_EQ(generate_ids(m, {7, 8}, free).timings.grammar_ms, 0.0);
}

TEST(GenerateGrammar, DeadEndEndsTheSequence) {
  const LoadedModel m = random_model();
  // After "a" the grammar wants a character no code point is: nothing can be sampled.
  const auto g = Grammar::from_gbnf(R"(root ::= "a" [^\x00-\U0010FFFF])");
  const GenerationResult r = generate_ids(m, {3}, sampled(1, g));
  EXPECT_EQ(r.text, "a");
  EXPECT_EQ(r.finish, FinishReason::kGrammarDeadEnd);
  EXPECT_STREQ(finish_reason_name(r.finish), "grammar_dead_end");
}

TEST(GenerateGrammar, NeedsATokenizer) {
  LoadedModel m = random_model();
  m.tokenizer.reset();
  spore::test::expect_error([&] { generate_ids(m, {3}, sampled(1, Grammar::from_gbnf("root ::= \"a\""))); },
                            ErrorCode::kValue, "grammar needs the model's tokenizer");
}

}  // namespace
}  // namespace spore::nlp
