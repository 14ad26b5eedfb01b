// Bad templates and bad input: syntax errors name line and column, unsupported constructs name
// themselves and their line, runaway templates stop at the step limit, and the template's own
// raise_exception reaches the caller with its message.
#include <gtest/gtest.h>

#include <ctime>

#include "spore/error.h"
#include "spore/nlp/chat_template.h"

namespace {

using spore::ErrorCode;
using spore::nlp::ChatTemplate;
using spore::nlp::RenderOptions;

const char* kMessages = R"([{"role": "user", "content": "Hi"}])";

// The error a callable throws, or fails the test when it throws none.
template <typename F>
spore::Error error_of(F&& f) {
  try {
    f();
  } catch (const spore::Error& e) {
    return e;
  }
  ADD_FAILURE() << "no spore::Error thrown";
  return spore::Error(ErrorCode::kInternal, "none");
}

bool has(const spore::Error& e, const std::string& part) {
  return std::string(e.what()).find(part) != std::string::npos;
}

TEST(ChatTemplateErrors, SyntaxErrorNamesLineAndColumn) {
  auto e = error_of([] { ChatTemplate::from_text("line one\n{% if x %}\n  {{ a + }}\n{% endif %}"); });
  EXPECT_EQ(e.code(), ErrorCode::kFormat);
  EXPECT_TRUE(has(e, "line 3, column 10")) << e.what();

  e = error_of([] { ChatTemplate::from_text("{% for m in messages %}{{ m }}"); });
  EXPECT_EQ(e.code(), ErrorCode::kFormat);
  EXPECT_TRUE(has(e, "'endfor'")) << e.what();

  e = error_of([] { ChatTemplate::from_text("ok\n{{ (1, 2 }}"); });
  EXPECT_TRUE(has(e, "line 2, column 10")) << e.what();

  e = error_of([] { ChatTemplate::from_text("{{ 'unterminated }}"); });
  EXPECT_TRUE(has(e, "line 1, column 4")) << e.what();

  e = error_of([] { ChatTemplate::from_text("{# never closed"); });
  EXPECT_TRUE(has(e, "comment")) << e.what();

  e = error_of([] { ChatTemplate::from_text("{% endif %}"); });
  EXPECT_TRUE(has(e, "unknown statement 'endif'")) << e.what();

  e = error_of([] { ChatTemplate::from_text("{% break %}"); });
  EXPECT_TRUE(has(e, "outside of a for loop")) << e.what();
}

TEST(ChatTemplateErrors, UnsupportedConstructNamesItAndItsLine) {
  auto e = error_of([] { ChatTemplate::from_text("a\nb\n{% include 'other.jinja' %}"); });
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_TRUE(has(e, "line 3")) << e.what();
  EXPECT_TRUE(has(e, "include")) << e.what();

  e = error_of([] { ChatTemplate::from_text("\n{{ messages|wordwrap(10) }}"); });
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_TRUE(has(e, "line 2") && has(e, "filter 'wordwrap'")) << e.what();

  e = error_of([] { ChatTemplate::from_text("{% if x is prime %}{% endif %}"); });
  EXPECT_TRUE(has(e, "test 'prime'")) << e.what();

  e = error_of([] { ChatTemplate::from_text("{% for x in y recursive %}{% endfor %}"); });
  EXPECT_TRUE(has(e, "recursive")) << e.what();

  e = error_of([] { ChatTemplate::from_text("{{ '%s' % 'x' }}").render(kMessages); });
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_TRUE(has(e, "printf-style")) << e.what();
}

TEST(ChatTemplateErrors, StepLimitStopsRunawayTemplates) {
  RenderOptions small;
  small.step_limit = 10000;
  auto e = error_of([&] {
    ChatTemplate::from_text("{% for i in range(1000000) %}{% for j in range(1000000) %}x{% endfor %}{% endfor %}")
        .render(kMessages, false, "{}", small);
  });
  EXPECT_EQ(e.code(), ErrorCode::kValue);
  EXPECT_TRUE(has(e, "step limit of 10000")) << e.what();

  // Endless recursion stops at the macro depth, not with a stack overflow.
  e = error_of([] { ChatTemplate::from_text("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}").render(kMessages); });
  EXPECT_EQ(e.code(), ErrorCode::kValue);
  EXPECT_TRUE(has(e, "deeper than 100")) << e.what();

  // String blow-up stops at the output cap.
  RenderOptions tiny;
  tiny.max_output_bytes = 1 << 20;
  e = error_of([&] { ChatTemplate::from_text("{{ 'x' * 100000000 }}").render(kMessages, false, "{}", tiny); });
  EXPECT_EQ(e.code(), ErrorCode::kValue);

  // A legitimate template fits well inside the default limit.
  EXPECT_EQ(ChatTemplate::from_text("{% for i in range(1000) %}.{% endfor %}").render(kMessages).size(), 1000u);
}

TEST(ChatTemplateErrors, RaiseExceptionCarriesTheTemplatesMessage) {
  auto t = ChatTemplate::from_text(
      "{% for m in messages %}\n{% if m.role not in ['user', 'assistant'] %}\n"
      "{{ raise_exception('Conversation roles must be user or assistant') }}\n{% endif %}{% endfor %}");
  EXPECT_NO_THROW(t.render(kMessages));
  auto e = error_of([&] { t.render(R"([{"role": "tool", "content": "x"}])"); });
  EXPECT_EQ(e.code(), ErrorCode::kValue);
  EXPECT_TRUE(has(e, "Conversation roles must be user or assistant") && has(e, "line 3")) << e.what();
}

TEST(ChatTemplateErrors, UndefinedUseFailsLikeJinja2) {
  auto t = ChatTemplate::from_text("{{ messages[0].missing }}|{{ messages[0].missing.deeper }}");
  auto e = error_of([&] { t.render(kMessages); });
  EXPECT_EQ(e.code(), ErrorCode::kValue);
  EXPECT_TRUE(has(e, "'dict object' has no attribute 'missing'")) << e.what();
  // Printing or testing an undefined value is fine.
  EXPECT_EQ(ChatTemplate::from_text("[{{ nothing }}]{{ nothing is defined }}").render(kMessages), "[]False");
}

TEST(ChatTemplateErrors, BadInputJsonIsAFormatError) {
  auto t = ChatTemplate::from_text("{{ messages|length }}");
  EXPECT_EQ(error_of([&] { t.render("{\"role\": \"user\"}"); }).code(), ErrorCode::kFormat);
  EXPECT_EQ(error_of([&] { t.render("[1, 2]"); }).code(), ErrorCode::kFormat);
  EXPECT_EQ(error_of([&] { t.render("[{]"); }).code(), ErrorCode::kFormat);
  EXPECT_EQ(error_of([&] { t.render(kMessages, false, "[1]"); }).code(), ErrorCode::kFormat);
}

TEST(ChatTemplateErrors, StrftimeNowFormatsTheLocalTime) {
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char year[8];
  std::strftime(year, sizeof year, "%Y", &local);
  std::string got = ChatTemplate::from_text("{{ strftime_now('%Y') }}").render(kMessages);
  // A render straddling New Year's midnight could see the next year; accept either.
  EXPECT_TRUE(got == year || got == std::to_string(std::atoi(year) + 1)) << got;
}

}  // namespace

namespace {

TEST(ChatTemplateErrors, DeepNestingIsASyntaxErrorNotAStackOverflow) {
  std::string parens = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
  std::string chain = "{{ x" + [] { std::string s; for (int i = 0; i < 100000; ++i) s += ".a"; return s; }() + " }}";
  std::string sums = "{{ 1" + [] { std::string s; for (int i = 0; i < 100000; ++i) s += "+1"; return s; }() + " }}";
  std::string ifs;
  for (int i = 0; i < 5000; ++i) ifs += "{% if true %}";
  for (const std::string* text : {&parens, &chain, &sums, &ifs}) {
    try {
      spore::nlp::ChatTemplate::from_text(*text);
      ADD_FAILURE() << "accepted " << text->substr(0, 40);
    } catch (const spore::Error& e) {
      EXPECT_EQ(e.code(), spore::ErrorCode::kFormat);
      EXPECT_NE(std::string(e.what()).find("deeper than"), std::string::npos) << e.what();
    }
  }
  // Ordinary nesting is fine.
  EXPECT_EQ(spore::nlp::ChatTemplate::from_text("{{ ((((1 + 2) * 3) - 4) // 2) }}").render("[]"), "2");
}

}  // namespace

namespace {

TEST(ChatTemplateErrors, ExplodingDataStopsAtTheLimits) {
  spore::nlp::RenderOptions opt;
  opt.step_limit = 100000;
  opt.max_output_bytes = 1 << 20;
  const char* hostile[] = {
      // a list that doubles every iteration
      "{% set ns = namespace(l=[1]) %}{% for i in range(60) %}{% set ns.l = ns.l + ns.l %}{% endfor %}",
      // a repetition whose size overflows 64 bits
      "{{ ([1, 2, 3, 4] * 4611686018427387904)|length }}",
      // an empty pattern replaced by a large string
      "{{ ('x' * 100000)|replace('', 'y' * 100000) }}",
      "{{ ('x' * 100000).replace('', 'y' * 100000) }}",
      // a string that doubles every iteration
      "{% set ns = namespace(s='ab') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
  };
  for (const char* text : hostile) {
    try {
      spore::nlp::ChatTemplate::from_text(text).render("[]", false, "{}", opt);
      ADD_FAILURE() << "rendered " << text;
    } catch (const spore::Error& e) {
      EXPECT_EQ(e.code(), spore::ErrorCode::kValue) << text << ": " << e.what();
    }
  }
}

}  // namespace

namespace {

std::string nested_array(int depth) { return std::string((size_t)depth, '[') + "1" + std::string((size_t)depth, ']'); }

// NOTE [Hostile JSON]: the messages and kwargs are parsed under the one bound, kMaxJsonDepth (64
// objects and arrays inside each other), before anything copies or converts them; a 100,000-deep
// array used to overflow the stack while the messages were copied (issue 25).
TEST(ChatTemplateErrors, DeeplyNestedInputIsRefusedWhileParsing) {
  auto t = ChatTemplate::from_text("{{ messages|length }}");
  const std::string deep = nested_array(100000);
  const std::pair<std::string, std::string> inputs[] = {
      {R"([{"role": "user", "content": )" + deep + "}]", "{}"},
      {deep, "{}"},
      {kMessages, R"({"tools": )" + deep + "}"},
      {kMessages, R"({"documents": )" + deep + "}"},
      {kMessages, R"({"enable_thinking": )" + deep + "}"},
  };
  for (const auto& input : inputs) {  // not a structured binding: clang 14 cannot capture one
    auto e = error_of([&] { t.render(input.first, true, input.second); });
    EXPECT_EQ(e.code(), ErrorCode::kFormat);
    EXPECT_TRUE(has(e, "deeper than 64")) << e.what();
  }
  // The bound is exact: messages array, message object and 62 levels of content are 64.
  EXPECT_EQ(t.render(R"([{"role": "user", "content": )" + nested_array(62) + "}]"), "1");
  auto e = error_of([&] { t.render(R"([{"role": "user", "content": )" + nested_array(63) + "}]"); });
  EXPECT_TRUE(has(e, "deeper than 64")) << e.what();
}

// Printing, comparing and destroying a value recurse through it: a template that nests a value in
// itself in a loop stops at tmpl::kMaxValueDepth (128) with kValue instead of overflowing the stack.
TEST(ChatTemplateErrors, ValuesNestedInThemselvesStopAtTheDepthBound) {
  const char* hostile[] = {
      "{% set ns = namespace(x=[]) %}{% for i in range(200000) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x }}",
      "{% set ns = namespace(x={}) %}{% for i in range(200000) %}{% set ns.x = {'a': ns.x} %}{% endfor %}{{ ns.x }}",
      "{% set ns = namespace(n=none) %}{% for i in range(200000) %}{% set ns.n = namespace(a=ns.n) %}{% endfor %}",
      "{% set ns = namespace(x=[]) %}{% for i in range(200000) %}{% set ns.x = dict(a=ns.x) %}{% endfor %}",
      // loop.previtem hands the iterable's items back inside the loop object
      ("{% set ns = namespace(x=[]) %}{% for i in range(200000) %}{% for y in [ns.x, ns.x] %}{% if loop.last %}"
       "{% set ns.x = [loop] %}{% endif %}{% endfor %}{% endfor %}"),
  };
  for (const char* text : hostile) {
    auto e = error_of([&] { ChatTemplate::from_text(text).render(kMessages); });
    EXPECT_EQ(e.code(), ErrorCode::kValue) << text;
    EXPECT_TRUE(has(e, "deeper than 128")) << text << ": " << e.what();
  }
  // Nesting a template could plausibly build is fine, and prints as Python would.
  EXPECT_EQ(ChatTemplate::from_text(
                "{% set ns = namespace(x=[]) %}{% for i in range(3) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x }}")
                .render(kMessages),
            "[[[[]]]]");
  EXPECT_NO_THROW(ChatTemplate::from_text("{% set ns = namespace(x=[]) %}{% for i in range(100) %}"
                                          "{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x|tojson|length }}")
                      .render(kMessages));
}

}  // namespace
