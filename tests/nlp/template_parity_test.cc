// Chat templates against transformers: every rendering in tests/fixtures/templates/ was made by
// tools/make_template_fixtures.py through transformers' apply_chat_template pipeline (jinja2
// 3.1.6, transformers' environment). Spore must give the same bytes, or fail where jinja2 fails.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "spore/error.h"
#include "spore/nlp/chat_template.h"

namespace {

using Json = nlohmann::ordered_json;
const std::string kDir = std::string(SPORE_SOURCE_DIR) + "/tests/fixtures/templates/";

Json load_json(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return Json::parse(ss.str());
}

std::map<std::string, std::string> tokens_of(const Json& j) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : j.items()) out[k] = v.get<std::string>();
  return out;
}

TEST(ChatTemplateParity, EveryModelTemplateMatchesTransformers) {
  Json fixture = load_json(kDir + "cases.json");
  ASSERT_GT(fixture["cases"].size(), 80u);
  int compared = 0, failures_expected = 0;
  for (const auto& c : fixture["cases"]) {
    std::string rel = c["template"];
    SCOPED_TRACE(rel + " / " + c["conversation"].get<std::string>() + " agp=" +
                 (c["add_generation_prompt"].get<bool>() ? "1" : "0") + " kwargs=" + c["kwargs"].dump());
    auto tokens = tokens_of(c["special_tokens"]);
    spore::nlp::ChatTemplate t = spore::nlp::ChatTemplate::load(kDir + rel);
    if (rel.size() > 6 && rel.substr(rel.size() - 6) == ".jinja") {
      // No config beside TinyLlama's template: its tokens come with the case, as from_text takes them.
      std::ifstream f(kDir + rel);
      std::stringstream ss;
      ss << f.rdbuf();
      t = spore::nlp::ChatTemplate::from_text(ss.str(), tokens);
    } else {
      EXPECT_EQ(t.special_tokens(), tokens);
    }
    std::string messages = c["messages"].dump();
    std::string kwargs = c["kwargs"].dump();
    bool agp = c["add_generation_prompt"];
    if (c.contains("error")) {
      EXPECT_THROW(t.render(messages, agp, kwargs), spore::Error) << c["error"];
      ++failures_expected;
    } else {
      std::string got;
      ASSERT_NO_THROW(got = t.render(messages, agp, kwargs));
      EXPECT_EQ(got, c["expected"].get<std::string>());
      ++compared;
    }
  }
  EXPECT_GT(compared, 80);
  EXPECT_GT(failures_expected, 0);
}

TEST(ChatTemplateParity, OneConstructTemplatesMatchJinja2) {
  Json fixture = load_json(kDir + "features.json");
  auto tokens = tokens_of(fixture["special_tokens"]);
  std::string messages = fixture["messages"].dump();
  int n = 0;
  for (const auto& f : fixture["features"]) {
    std::string text = f["template"];
    SCOPED_TRACE("feature " + std::to_string(n++) + ": " + text);
    auto t = spore::nlp::ChatTemplate::from_text(text, tokens);
    if (f.contains("error")) {
      EXPECT_THROW(t.render(messages, true), spore::Error) << f["error"];
    } else {
      std::string got;
      ASSERT_NO_THROW(got = t.render(messages, true));
      EXPECT_EQ(got, f["expected"].get<std::string>());
    }
  }
  EXPECT_GE(n, 40);
}

}  // namespace
