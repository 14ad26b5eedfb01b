// The grammar engine (NOTE [Grammars]): GBNF parsing and its typed errors, matching against
// std::regex as the independent reference for regular grammars, token masks against a brute
// force over the vocabulary (no trie), integer ranges against arithmetic, patterns against
// std::regex, and the engine's dead end.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <regex>

#include "grammar_brute_force.h"
#include "nlp/grammar/gbnf_text.h"
#include "nlp/grammar/matcher.h"
#include "spore/nlp/grammar.h"
#include "test_util.h"

namespace spore::nlp {
namespace {

using detail::GrammarState;
using spore::test::expect_error;
using test::expect_mask_is_brute_force;

bool matches(const Grammar& g, std::string_view text) {
  GrammarState s = GrammarState::start(g.impl());
  return s.feed(g.impl(), text) && s.accepting();
}

std::string random_string(std::mt19937& rng, std::string_view alphabet, size_t max_len) {
  std::string out(rng() % (max_len + 1), ' ');
  for (char& c : out) c = alphabet[rng() % alphabet.size()];
  return out;
}

// Regular grammars and the ECMAScript regexes that describe the same language.
TEST(Grammar, AcceptsExactlyWhatTheEquivalentRegexAccepts) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"(root ::= [a-c]+ ("x" | "yz")? [0-9]{2,3})", "[a-c]+(x|yz)?[0-9]{2,3}"},
      {R"(root ::= ("ab" | "a")* "b"  # comment
)", "(ab|a)*b"},
      {"root ::= item (\",\" item)*\nitem ::= [^,x]{1,2}", "[^,x]{1,2}(,[^,x]{1,2})*"},
      {"root ::= (\n  \"a\" |\n  \"b\" \"c\"?\n)+ .", "(a|bc?)+[\\s\\S]"},
      {R"(root ::= "x"{,2} "y"{2,} [\x61-\x62]?)", "x{0,2}y{2,}[a-b]?"},
  };
  std::mt19937 rng(7);
  for (const auto& [gbnf, re] : cases) {
    const auto g = Grammar::from_gbnf(gbnf);
    const std::regex r(re);
    int accepted = 0;
    for (int i = 0; i < 3000; ++i) {
      const std::string s = random_string(rng, "abcxyz019,", 9);
      const bool want = std::regex_match(s, r);
      accepted += want;
      EXPECT_EQ(matches(*g, s), want) << gbnf << " on '" << s << "'";
    }
    EXPECT_GT(accepted, 5) << gbnf;  // the comparison saw both answers
  }
}

// A prefix that can only become a surrogate is refused at once: a negated class takes every code
// point, and the state must not survive a byte after which no continuation is valid UTF-8.
TEST(Grammar, SurrogatePrefixesAreRefusedEarly) {
  const auto g = Grammar::from_gbnf(R"(root ::= [^a]+)");
  GrammarState s = GrammarState::start(g->impl());
  ASSERT_TRUE(s.feed(g->impl(), "\xED"));  // may still become U+D000..U+D7FF
  GrammarState low = s;
  EXPECT_TRUE(low.feed(g->impl(), "\x9F"));  // U+D7C0..U+D7FF
  EXPECT_TRUE(low.feed(g->impl(), "\xBF"));  // U+D7FF
  EXPECT_TRUE(low.accepting());
  GrammarState high = s;
  EXPECT_FALSE(high.feed(g->impl(), "\xA0"));  // U+D800..: surrogates only
  GrammarState full = GrammarState::start(g->impl());
  EXPECT_FALSE(full.feed(g->impl(), "\xED\xBF\xBF"));
  // Inside a JSON string (a negated class), every second byte after ED: below A0 a code point.
  const auto json = Grammar::from_gbnf(R"(root ::= "\"" [^"\\\x7F\x00-\x1F]* "\"")");
  for (int second = 0x80; second <= 0xBF; ++second) {
    GrammarState q = GrammarState::start(json->impl());
    ASSERT_TRUE(q.feed(json->impl(), "\"\xED"));
    EXPECT_EQ(q.feed(json->impl(), (uint8_t)second), second < 0xA0) << std::hex << second;
  }
}

TEST(Grammar, Utf8LiteralsEscapesAndNegatedClasses) {
  const auto g = Grammar::from_gbnf(R"(root ::= "é\u00e9\t" [^\U0001F600] "\x41")");
  EXPECT_TRUE(matches(*g, "éé\tzA"));
  EXPECT_TRUE(matches(*g, "éé\t中A"));
  EXPECT_FALSE(matches(*g, "éé\t\xF0\x9F\x98\x80" "A"));
  EXPECT_FALSE(matches(*g, "éé\tzB"));
  // A partial code point is viable only while some character could still complete it.
  GrammarState s = GrammarState::start(g->impl());
  ASSERT_TRUE(s.feed(g->impl(), "\xC3"));
  EXPECT_FALSE(s.accepting());
  EXPECT_FALSE(s.feed(g->impl(), "\xA8"));  // è is not é
  // A lead byte whose code points (never below its length's minimum) none of the tops takes.
  const auto quote = Grammar::from_gbnf(R"(root ::= "\"" [\x00-\x7F]*)");
  for (const char* lead : {"\xF0", "\xE0", "\xC2", "\xC0", "\xF5"}) {
    GrammarState q = GrammarState::start(quote->impl());
    EXPECT_FALSE(q.feed(quote->impl(), lead)) << (int)(unsigned char)lead[0];
    q = GrammarState::start(quote->impl());
    ASSERT_TRUE(q.feed(quote->impl(), "\""));
    EXPECT_FALSE(q.feed(quote->impl(), lead)) << (int)(unsigned char)lead[0];
  }
  // Surrogates and overlong forms are not UTF-8 even where any character may come.
  const auto any = Grammar::from_gbnf("root ::= .*");
  for (const char* bad : {"\xED\xA0\x80", "\xE0\x80\xAF", "\xC1\xBF", "\xF4\x90\x80\x80"}) {
    GrammarState q = GrammarState::start(any->impl());
    EXPECT_FALSE(q.feed(any->impl(), bad));
  }
  GrammarState ok = GrammarState::start(any->impl());
  EXPECT_TRUE(ok.feed(any->impl(), "\xF0\x9F\x98\x80\xED\x9F\xBF"));  // U+1F600, U+D7FF
  // ... and refused at the byte that commits to one: after ED, A0..BF can only end as a
  // surrogate. Allowed there, a byte-level vocabulary could sample it and then find no token
  // the grammar takes (a dead end, seen in JSON strings: a negated class takes U+D800 as a number).
  const auto json_char = Grammar::from_gbnf(R"(root ::= "\"" [^"\\\x7F\x00-\x1F]* "\"")");
  for (const auto* g : {any.get(), json_char.get()}) {
    for (int second = 0x80; second <= 0xBF; ++second) {
      GrammarState q = GrammarState::start(g->impl());
      if (g == json_char.get()) {
        ASSERT_TRUE(q.feed(g->impl(), "\""));
      }
      ASSERT_TRUE(q.feed(g->impl(), (uint8_t)0xED));
      EXPECT_EQ(q.feed(g->impl(), (uint8_t)second), second < 0xA0) << std::hex << second;
    }
  }
}

TEST(Grammar, TypedErrorsNameTheProblemAndTheFix) {
  expect_error([] { Grammar::from_gbnf("root ::= a\n"); }, ErrorCode::kValue, "'a' is used but never defined", "line 1");
  expect_error([] { Grammar::from_gbnf("start ::= \"x\""); }, ErrorCode::kValue, "no rule 'root'");
  expect_error([] { Grammar::from_gbnf("root ::= root \"x\" | \"y\""); }, ErrorCode::kValue, "left-recursive", "root -> root");
  // Indirect, through a rule that derives the empty string.
  expect_error([] { Grammar::from_gbnf("root ::= e a\na ::= \"z\"? root \"x\" | \"y\"\ne ::= \"q\"?"); }, ErrorCode::kValue,
               "left-recursive");
  expect_error([] { Grammar::from_gbnf("root ::= \"(\" root \")\""); }, ErrorCode::kValue, "derives no finite string");
  expect_error([] { Grammar::from_gbnf("root ::= \"abc"); }, ErrorCode::kValue, "not closed");
  expect_error([] { Grammar::from_gbnf("root ::= [a-"); }, ErrorCode::kValue, "not closed");
  expect_error([] { Grammar::from_gbnf("root ::= (\"a\""); }, ErrorCode::kValue, "'(' is not closed");
  expect_error([] { Grammar::from_gbnf("root ::= * \"a\""); }, ErrorCode::kValue, "follows nothing");
  expect_error([] { Grammar::from_gbnf("root ::= \"a\"{3,1}"); }, ErrorCode::kValue, "n < m");
  expect_error([] { Grammar::from_gbnf("root ::= [z-a]"); }, ErrorCode::kValue, "backwards");
  expect_error([] { Grammar::from_gbnf("root ::= \"\\q\""); }, ErrorCode::kValue, "unknown escape");
  expect_error([] { Grammar::from_gbnf("root ::= \"a\"\nroot ::= \"b\""); }, ErrorCode::kValue, "defined twice");
  expect_error([] { Grammar::from_gbnf(""); }, ErrorCode::kValue, "empty");
  expect_error([] { Grammar::from_gbnf("root ::= <[12]>"); }, ErrorCode::kValue, "token references");
}

TEST(Grammar, HostileGrammarsAreRefusedQuickly) {
  const auto t0 = std::chrono::steady_clock::now();
  expect_error([] { Grammar::from_gbnf("root ::= \"a\"{99999}"); }, ErrorCode::kValue, "repetition count");
  GrammarLimits few;
  few.max_elements = 1000;
  expect_error([&] { Grammar::from_gbnf("root ::= \"ab\"{600}", few); }, ErrorCode::kValue, "symbols");
  expect_error([] { Grammar::from_gbnf("root ::= " + std::string(500, '(') + "\"a\"" + std::string(500, ')')); },
               ErrorCode::kValue, "nest deeper");
  // Nested nullable rules: 2^30 ways to derive the empty prefix before the first character.
  std::string explode = "root ::= r0 \"!\"\n";
  for (int i = 0; i < 30; ++i) explode += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + " r" + std::to_string(i + 1) + "\n";
  explode += "r30 ::= \"a\" | \n";
  expect_error([&] { Grammar::from_gbnf(explode); }, ErrorCode::kValue, "parses are alive");
  // A long chain of rules (deep recursion in a naive checker).
  std::string chain = "root ::= c0\n";
  for (int i = 0; i < 15000; ++i) chain += "c" + std::to_string(i) + " ::= c" + std::to_string(i + 1) + " | \"x\"\n";
  chain += "c15000 ::= c0 \"y\"\n";
  expect_error([&] { Grammar::from_gbnf(chain); }, ErrorCode::kValue, "left-recursive");
  GrammarLimits small;
  small.max_text_bytes = 10;
  expect_error([&] { Grammar::from_gbnf("root ::= \"abcdefgh\"", small); }, ErrorCode::kValue, "limit");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
}

class GrammarMatcherWalk : public ::testing::TestWithParam<size_t> {};

// With the walk's state tables (the default) and with them full almost at once (the fallback).
TEST_P(GrammarMatcherWalk, MaskEqualsBruteForceAlongAJsonText) {
  const Tokenizer tok = Tokenizer::from_file(std::string(SPORE_SOURCE_DIR) + "/tests/fixtures/tokenizers/tiny_smollm");
  const auto trie = std::make_shared<const detail::TokenTrie>(detail::token_bytes(tok), tok.vocab_size());
  GrammarLimits limits;
  limits.max_walk_states = GetParam();
  const auto g = Grammar::from_gbnf(json_schema_to_gbnf(
      R"({"type":"object","properties":{"name":{"type":"string"},"n":{"type":"integer","minimum":-5,"maximum":300}},"required":["name","n"],"additionalProperties":false})"),
      limits);
  const int32_t eos = *tok.token_to_id("<|endoftext|>");
  detail::GrammarMatcher m(g, trie, {eos});
  GrammarState state = GrammarState::start(g->impl());
  const std::string text = "{\"name\": \"Hello 👍🏽 world\", \"n\": 299}";
  const std::vector<int32_t> ids = tok.encode(text);
  for (size_t i = 0; i <= ids.size(); ++i) {
    expect_mask_is_brute_force(*g, *trie, m, state, {eos}, "after " + std::to_string(i) + " tokens");
    if (i == ids.size()) break;
    m.accept(ids[i]);
    ASSERT_TRUE(state.feed(g->impl(), *trie->bytes_of(ids[i])));
  }
  EXPECT_TRUE(m.accepting());
  EXPECT_TRUE(detail::GrammarMatcher::test(m.allowed(), eos));
  expect_error([&] { m.accept(*tok.token_to_id("{")); }, ErrorCode::kValue, "does not continue");
}
INSTANTIATE_TEST_SUITE_P(Tables, GrammarMatcherWalk, ::testing::Values(size_t{1} << 16, size_t{2}));

TEST(GrammarMatcher, MasksAreCachedPerState) {
  const Tokenizer tok = Tokenizer::from_file(std::string(SPORE_SOURCE_DIR) + "/tests/fixtures/tokenizers/tiny_smollm");
  const auto trie = std::make_shared<const detail::TokenTrie>(detail::token_bytes(tok), tok.vocab_size());
  const auto g = Grammar::from_gbnf("root ::= [a-z]* \".\"");
  detail::GrammarMatcher m(g, trie, {});
  m.allowed();
  for (int32_t id : tok.encode("hello world")) {
    if (*trie->bytes_of(id) == " ") continue;
    if (trie->bytes_of(id)->find(' ') != std::string::npos) continue;
    m.accept(id);
    m.allowed();
  }
  EXPECT_EQ(m.cached_masks(), 1u);  // every state inside [a-z]* is the same state
  m.accept(*tok.token_to_id("."));
  EXPECT_TRUE(m.finished());
}

// Qwen2.5's vocabulary (151,643 ranks): masks still equal the brute force.
TEST(GrammarMatcher, QwenVocabularyMaskEqualsBruteForce) {
  const Tokenizer tok = Tokenizer::from_file(std::string(SPORE_SOURCE_DIR) + "/tests/fixtures/tokenizers/qwen3");
  const auto trie = std::make_shared<const detail::TokenTrie>(detail::token_bytes(tok), tok.vocab_size());
  const auto g = Grammar::from_gbnf(json_object_gbnf());
  detail::GrammarMatcher m(g, trie, {});
  GrammarState state = GrammarState::start(g->impl());
  for (int32_t id : tok.encode("{\"a\": [1, \"x")) {
    m.accept(id);
    ASSERT_TRUE(state.feed(g->impl(), *trie->bytes_of(id)));
  }
  expect_mask_is_brute_force(*g, *trie, m, state, {}, "inside a string");
}

TEST(JsonSchema, IntegerRangesAreExact) {
  std::mt19937 rng(3);
  for (int t = 0; t < 25; ++t) {
    const int64_t lo = (int64_t)(rng() % 4000) - 2000, hi = lo + (int64_t)(rng() % 3000);
    const auto g = Grammar::from_gbnf(json_schema_to_gbnf(
        "{\"type\":\"integer\",\"minimum\":" + std::to_string(lo) + ",\"maximum\":" + std::to_string(hi) + "}"));
    for (int64_t v = lo - 30; v <= hi + 30; v += 1 + (int64_t)(rng() % 13))
      ASSERT_EQ(matches(*g, std::to_string(v)), v >= lo && v <= hi) << lo << ".." << hi << " at " << v;
    EXPECT_FALSE(matches(*g, "0" + std::to_string(std::max<int64_t>(lo, 1))));  // no leading zeros
  }
  const auto ex = Grammar::from_gbnf(json_schema_to_gbnf(R"({"type":"number","exclusiveMinimum":1.5,"exclusiveMaximum":4})"));
  EXPECT_FALSE(matches(*ex, "1"));
  EXPECT_TRUE(matches(*ex, "2"));
  EXPECT_TRUE(matches(*ex, "3"));
  EXPECT_FALSE(matches(*ex, "4"));
}

TEST(JsonSchema, ObjectsArraysEnumsAndFormats) {
  const auto obj = Grammar::from_gbnf(json_schema_to_gbnf(R"({"type":"object","properties":{
      "a":{"type":"boolean"},"b":{"enum":["x",2,null]},"c":{"type":"array","items":{"type":"null"},"minItems":1,"maxItems":2}},
      "required":["b"],"additionalProperties":false})"));
  EXPECT_TRUE(matches(*obj, R"({"b": "x"})"));
  EXPECT_TRUE(matches(*obj, R"({"a": true, "b": 2, "c": [null]})"));
  EXPECT_TRUE(matches(*obj, R"({"b": null,"c": [null, null]})"));
  EXPECT_FALSE(matches(*obj, R"({"a": true})"));               // b is required
  EXPECT_FALSE(matches(*obj, R"({"b": "y"})"));                // not in the enum
  EXPECT_FALSE(matches(*obj, R"({"b": 2, "c": []})"));         // minItems
  EXPECT_FALSE(matches(*obj, R"({"b": 2, "c": [null, null, null]})"));
  const auto tuple = Grammar::from_gbnf(json_schema_to_gbnf(
      R"({"type":"array","prefixItems":[{"type":"string","format":"date"},{"type":"string","format":"uuid"}],"items":false,"minItems":1})"));
  EXPECT_TRUE(matches(*tuple, R"(["2024-02-28"])"));
  EXPECT_TRUE(matches(*tuple, R"(["2024-12-31", "123e4567-e89b-12d3-a456-426614174000"])"));
  EXPECT_FALSE(matches(*tuple, R"(["2024-13-01"])"));
  EXPECT_FALSE(matches(*tuple, R"([])"));
  const auto any = Grammar::from_gbnf(json_object_gbnf());
  EXPECT_TRUE(matches(*any, R"({"k": [1, -2.5e3, "s\n\u00e9", {}, true, null]})"));
  EXPECT_FALSE(matches(*any, R"([1])"));
  EXPECT_FALSE(matches(*any, R"({"k": 01})"));
}

TEST(JsonSchema, UnsupportedAndHostileSchemasAreKValue) {
  expect_error([] { json_schema_to_gbnf(R"({"type":"string","format":"hostname"})"); }, ErrorCode::kValue, "hostname");
  expect_error([] { json_schema_to_gbnf(R"({"not":{"type":"string"}})"); }, ErrorCode::kValue, "'not'");
  expect_error([] { json_schema_to_gbnf(R"({"$ref":"#/$defs/missing"})"); }, ErrorCode::kValue, "does not resolve");
  expect_error([] { json_schema_to_gbnf(R"({"type":"string","pattern":"(a+)+$"})"); }, ErrorCode::kValue, "catastrophic");
  expect_error([] { json_schema_to_gbnf(R"({"type":"string","pattern":"(?=a)b"})"); }, ErrorCode::kValue, "lookaround");
  // Hex escapes with non-hex digits (the fuzzer found \x taking any two characters).
  expect_error([] { json_schema_to_gbnf(R"({"type":"string","pattern":"\\xZZ"})"); }, ErrorCode::kValue, "two hex");
  expect_error([] { json_schema_to_gbnf(R"({"type":"string","pattern":"a\\u12G4"})"); }, ErrorCode::kValue, "four hex");
  // An unbounded repetition of something that matches the empty string would be a rule that
  // recurses before reading anything (the fuzzer found (|)+); a bounded one is fine.
  for (const char* p : {"a+(|)+-$", "(a?)*", "(a|)+", "(b?c?){3,}"})
    expect_error([&] { json_schema_to_gbnf(std::string(R"({"type":"string","pattern":")") + p + "\"}"); }, ErrorCode::kValue,
                 "can match the empty string");
  EXPECT_TRUE(matches(*Grammar::from_gbnf(json_schema_to_gbnf(R"({"type":"string","pattern":"(a?){2,3}b"})")), "\"ab\""));
  // An empty group under any quantifier is empty (the fuzzer found ()? left as a bare "" ?).
  for (const char* p : {"x()?y", "x()*y", "x(?:){2,}y"})
    EXPECT_TRUE(matches(*Grammar::from_gbnf(json_schema_to_gbnf(std::string(R"({"type":"string","pattern":")") + p + "\"}")),
                        "\"xy\""))
        << p;
  expect_error([] { json_schema_to_gbnf(R"({"type":"integer","minimum":5,"maximum":4})"); }, ErrorCode::kValue, "no integer");
  expect_error([] { json_schema_to_gbnf("{\"type\":"); }, ErrorCode::kValue, "not valid JSON");
  std::string deep;
  for (int i = 0; i < 5000; ++i) deep += "{\"items\":";
  deep += "{}" + std::string(5000, '}');
  expect_error([&] { json_schema_to_gbnf(deep); }, ErrorCode::kValue, "nests deeper");
  // A recursive schema is fine (the recursion is inside brackets).
  const auto tree = Grammar::from_gbnf(json_schema_to_gbnf(R"({"$defs":{"n":{"type":"object","properties":{
      "kids":{"type":"array","items":{"$ref":"#/$defs/n"}}},"required":["kids"],"additionalProperties":false}},"$ref":"#/$defs/n"})"));
  EXPECT_TRUE(matches(*tree, R"({"kids": [{"kids": []}, {"kids": [{"kids": []}]}]})"));
  EXPECT_FALSE(matches(*tree, R"({"kids": [{}]})"));
}

TEST(JsonSchema, PatternsMatchWhatStdRegexMatches) {
  // Each pattern with an alphabet that makes matches common enough to see both answers.
  const std::vector<std::pair<std::string, std::string>> patterns = {
      {"^[a-c]{2,4}-\\d+$", "ab-09"}, {"(ab|c)*x?", "abcx"}, {"[^a-c0]b.", "abx0. "}, {"^\\w\\W?[xyz]+$", "ax -"},
      {"a(?:bc)?[.\\-]+", "abc.-"}};
  std::mt19937 rng(11);
  for (const auto& [p, alphabet] : patterns) {
    const auto g = Grammar::from_gbnf("root ::= " + detail::regex_to_gbnf(p));
    std::string anchored = p;
    if (anchored[0] == '^') anchored.erase(0, 1);
    if (anchored.back() == '$') anchored.pop_back();
    const std::regex r(anchored);
    int accepted = 0;
    for (int i = 0; i < 3000; ++i) {
      const std::string s = random_string(rng, alphabet, 7);
      const bool want = std::regex_match(s, r);
      accepted += want;
      EXPECT_EQ(matches(*g, s), want) << p << " on '" << s << "'";
    }
    EXPECT_GT(accepted, 3) << p;
  }
}

}  // namespace
}  // namespace spore::nlp
