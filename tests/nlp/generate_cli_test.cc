// `spore generate` and `spore chat` run as a person or a script runs them. Usage errors need no
// model; the runs use the embedded default (SmolLM2-135M-Instruct, scripts/fetch-model.sh) and
// are skipped, saying why, when it is not fetched or this build has no model loader.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "spore_cli_run.h"

#include <cstdio>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>

namespace {

const std::string kSpore = std::string(SPORE_BINARY_DIR) + "/bin/spore";

using spore::test::CliRun;
CliRun run(const std::string& args, const std::string& input = "") {
  return spore::test::run_spore(args, input, "spore_generate_cli");
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

// Empty when the default model is fetched; else the reason to skip.
std::string model_unavailable() {
  const auto dir = std::filesystem::path(SPORE_SOURCE_DIR) / "models/smollm2-135m-instruct";
  if (std::filesystem::is_directory(dir))
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().extension() == ".gguf") return "";
  return dir.string() + " is not there (bash scripts/fetch-model.sh)";
}

TEST(GenerateCli, UsageErrorsNeedNoModel) {
  ASSERT_TRUE(std::filesystem::exists(kSpore)) << "build spore_cli first";
  CliRun r = run("generate --max-tokens 4");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--prompt"), std::string::npos) << r.err;
  r = run("generate --prompt x --temperature -1");
  EXPECT_EQ(r.status, 2);
  r = run("generate --prompt x --prompt-ids 1,2");
  EXPECT_EQ(r.status, 2);
  r = run("generate --model /nonexistent/model.gguf --prompt x");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("/nonexistent/model.gguf"), std::string::npos) << r.err;
  r = run("generate --help");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("spore generate --prompt"), std::string::npos);  // the example line
}

TEST(GenerateCli, GreedyTextIdsStopAndMemory) {
  if (const std::string why = model_unavailable(); !why.empty()) GTEST_SKIP() << why;
  CliRun r = run("generate --prompt 'The capital of France is' --max-tokens 12 --temperature 0");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("Paris"), std::string::npos) << r.out;
  for (const char* part : {"prompt 5 tokens", "prefill", "tokens/s", "first token", "KV cache", "finish: length"})
    EXPECT_NE(r.err.find(part), std::string::npos) << part << " in: " << r.err;
  const std::string streamed = r.out;
  r = run("generate --prompt 'The capital of France is' --max-tokens 12 --temperature 0 --print-ids");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ids"].size(), 12u);
  EXPECT_EQ(j["prompt_ids"], nlohmann::json::parse("[504,3575,282,4649,314]"));  // spore tokenize's ids
  EXPECT_EQ(j["text"].get<std::string>() + "\n", streamed);  // the same text, streamed or not
  EXPECT_EQ(j["finish"], "length");
  // A stop string inside the greedy text cuts it before the stop.
  const std::string text = j["text"];
  const size_t paris = text.find("Paris");
  ASSERT_NE(paris, std::string::npos);
  r = run("generate --prompt 'The capital of France is' --max-tokens 12 --temperature 0 --stop Paris --print-ids");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["text"], text.substr(0, paris));
  EXPECT_EQ(nlohmann::json::parse(r.out)["finish"], "stop");
  // --max-memory too small: the figures, exit 2, nothing generated.
  r = run("generate --prompt hi --max-tokens 4 --context 4096 --max-memory 1000000");
  EXPECT_EQ(r.status, 2);
  for (const char* part : {"weights", "KV cache", "scratch", "--max-memory"})
    EXPECT_NE(r.err.find(part), std::string::npos) << part << " in: " << r.err;
  EXPECT_TRUE(r.out.empty());
  // Seeded sampling repeats itself.
  const std::string s1 = run("generate --prompt 'Once upon a time' --max-tokens 8 --seed 7 --print-ids").out;
  EXPECT_EQ(s1, run("generate --prompt 'Once upon a time' --max-tokens 8 --seed 7 --print-ids").out);
  EXPECT_EQ(nlohmann::json::parse(s1)["ids"].size(), 8u);
}

// --grammar-file and --json-schema-file (NOTE [Grammars]): the text is in the grammar's language
// (checked with std::regex, JSON parsed), and a bad file is exit 2 naming the file and the line.
TEST(GenerateCli, GrammarAndSchemaFiles) {
  if (const std::string why = model_unavailable(); !why.empty()) GTEST_SKIP() << why;
  const auto dir = std::filesystem::temp_directory_path() / ("spore_grammar_cli." + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "answer.gbnf") << "root ::= \" \" (\"Paris\" | \"Lyon\") \", a city of \" [0-9]{1,2} \" million.\"\n";
  CliRun r = run("generate --prompt 'The capital of France is' --max-tokens 30 --temperature 0 --print-ids --grammar-file " +
                 (dir / "answer.gbnf").string());
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(std::regex_match(j["text"].get<std::string>(), std::regex(" (Paris|Lyon), a city of [0-9]{1,2} million\\.")))
      << j["text"];
  EXPECT_EQ(j["finish"], "stop");
  std::ofstream(dir / "schema.json") << R"({"type":"object","properties":{"city":{"type":"string","maxLength":12},
      "people":{"type":"integer","minimum":0,"maximum":99}},"required":["city","people"],"additionalProperties":false})";
  r = run("generate --chat --prompt 'The capital of France as JSON' --max-tokens 60 --temperature 0 --print-ids "
          "--json-schema-file " + (dir / "schema.json").string());
  ASSERT_EQ(r.status, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  const auto obj = nlohmann::json::parse(j["text"].get<std::string>());
  EXPECT_TRUE(obj["city"].is_string() && obj["people"].is_number_integer()) << obj;
  std::ofstream(dir / "bad.gbnf") << "root ::= item\nitem ::= item \"x\" | \"y\"\n";
  r = run("generate --prompt hi --max-tokens 4 --grammar-file " + (dir / "bad.gbnf").string());
  EXPECT_EQ(r.status, 2);
  for (const char* part : {"bad.gbnf", "left-recursive", "item"}) EXPECT_NE(r.err.find(part), std::string::npos) << part << " in " << r.err;
  r = run("generate --prompt hi --max-tokens 4 --grammar-file " + (dir / "missing.gbnf").string());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("missing.gbnf"), std::string::npos) << r.err;
  std::filesystem::remove_all(dir);
}

TEST(GenerateCli, ChatFromStdinWithResetAndExit) {
  if (const std::string why = model_unavailable(); !why.empty()) GTEST_SKIP() << why;
  const CliRun r = run("chat --temperature 0 --max-tokens 12 --system 'You are a helpful assistant.'",
                    "What is the capital of France?\n/reset\n\nName a colour.\n/exit\nnot read\n");
  ASSERT_EQ(r.status, 0) << r.err;
  // Two answers (the empty line is skipped, nothing after /exit is read), each with its figures.
  EXPECT_EQ(count(r.err, "tokens/s"), 2u) << r.err;
  EXPECT_EQ(count(r.out, "\n"), 2u) << r.out;
  EXPECT_NE(r.err.find("(conversation reset)"), std::string::npos);
  EXPECT_GT(r.out.size(), 8u);
  EXPECT_EQ(r.out.find("\xEF\xBF\xBD"), std::string::npos);
  EXPECT_EQ(r.out.find("<|im_"), std::string::npos) << r.out;  // the template's markers stay out
  // End of input ends the chat too.
  EXPECT_EQ(run("chat --temperature 0 --max-tokens 4", "Hi\n").status, 0);
}

// The second turn reuses the first turn's KV rows (NOTE [Prefix cache]): at least the whole first
// prompt is reported cached.
TEST(GenerateCli, ChatReusesTheConversationsCacheBetweenTurns) {
  if (const std::string why = model_unavailable(); !why.empty()) GTEST_SKIP() << why;
  const CliRun r = run("chat --temperature 0 --max-tokens 8", "What is the capital of France?\nAnd of Italy?\n");
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<std::pair<long, long>> turns;  // (prompt tokens, cached)
  for (size_t pos = 0; (pos = r.err.find(", prompt ", pos)) != std::string::npos; ++pos) {
    long prompt = 0, cached = -1;
    ASSERT_EQ(std::sscanf(r.err.c_str() + pos, ", prompt %ld tokens, %ld cached]", &prompt, &cached), 2) << r.err;
    turns.emplace_back(prompt, cached);
  }
  ASSERT_EQ(turns.size(), 2u) << r.err;
  EXPECT_EQ(turns[0].second, 0);
  EXPECT_GE(turns[1].second, turns[0].first) << r.err;
  EXPECT_LT(turns[1].second, turns[1].first);
}

}  // namespace

// NOTE [Speculative decoding] from the command line: the same greedy ids with --spec-type ngram,
// the acceptance in the figures line, and typed usage errors.
TEST(GenerateCli, SpeculativeFlags) {
  ASSERT_TRUE(std::filesystem::exists(kSpore)) << "build spore_cli first";
  CliRun bad = run("generate --prompt x --spec-type medusa");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("medusa"), std::string::npos) << bad.err;
  bad = run("generate --prompt x --spec-type draft");  // no --spec-draft-model
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--spec-draft-model"), std::string::npos) << bad.err;
  bad = run("generate --prompt x --spec-type ngram --spec-draft-n-max 0");
  EXPECT_EQ(bad.status, 2);
  if (const std::string why = model_unavailable(); !why.empty()) GTEST_SKIP() << why;
  const std::string prompt =
      "--prompt 'Repeat: the red fox and the blue fox and the green fox. Repeat: the red fox and the' "
      "--max-tokens 16 --temperature 0 --ignore-eos --print-ids";
  const CliRun plain = run("generate " + prompt);
  ASSERT_EQ(plain.status, 0) << plain.err;
  const CliRun spec = run("generate " + prompt + " --spec-type ngram --draft-max 4");
  ASSERT_EQ(spec.status, 0) << spec.err;
  EXPECT_EQ(nlohmann::json::parse(spec.out)["ids"], nlohmann::json::parse(plain.out)["ids"]);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(spec.err, m, std::regex(R"(speculative ngram: (\d+) drafted, (\d+) accepted \(([0-9.]+)%\))")))
      << spec.err;
  EXPECT_GT(std::stoi(m[2]), 0) << spec.err;
  EXPECT_EQ(plain.err.find("speculative"), std::string::npos) << plain.err;
  // A draft model of another vocabulary (the llama fixture's) is a typed error naming both.
  const std::string other = std::string(SPORE_SOURCE_DIR) + "/tests/fixtures/llm/llama/model.gguf";
  const CliRun mismatch = run("generate --prompt x --max-tokens 2 --spec-draft-model " + other);
  EXPECT_EQ(mismatch.status, 2) << mismatch.err;
  EXPECT_NE(mismatch.err.find("vocabulary"), std::string::npos) << mismatch.err;
  EXPECT_NE(mismatch.err.find(other), std::string::npos) << mismatch.err;
}
