// `spore template PATH --messages FILE.json [--add-generation-prompt] [--kwargs JSON]` end to
// end: the exact bytes of transformers' rendering on stdout, no newline added.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
const std::string kDir = std::string(SPORE_SOURCE_DIR) + "/tests/fixtures/templates/";
const std::string kCli = std::string(SPORE_BINARY_DIR) + "/bin/spore";

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Runs `spore template ...` with stdout to a file; returns the exit status.
int run_template(const std::string& args, const fs::path& out) {
  std::string cmd = kCli + " template " + args + " > " + out.string() + " 2>" + out.string() + ".err";
  int st = std::system(cmd.c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

TEST(ChatTemplateCli, PrintsTransformersRenderingExactly) {
  if (!fs::exists(kCli)) GTEST_SKIP() << "spore CLI not built at " << kCli;
  Json fixture = Json::parse(slurp(kDir + "cases.json"));
  fs::path tmp = fs::temp_directory_path() / ("spore_template_cli_" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  int checked = 0;
  for (const auto& c : fixture["cases"]) {
    std::string rel = c["template"];
    // The CLI reads special tokens from the config; TinyLlama's bare .jinja has none beside it.
    if (c.contains("error") || rel.find(".jinja") != std::string::npos) continue;
    if (c["conversation"] != "tool_calls" && c["conversation"] != "thinking") continue;
    SCOPED_TRACE(rel + " / " + c["conversation"].get<std::string>() + " " + c["kwargs"].dump());
    std::ofstream(tmp / "m.json") << c["messages"].dump();
    fs::path target = fs::path(kDir + rel);
    if (rel.rfind("qwen3-0.6b/", 0) == 0) target = target.parent_path();  // the model-directory form
    std::string args = quote(target.string()) + " --messages " + quote((tmp / "m.json").string());
    if (c["add_generation_prompt"].get<bool>()) args += " --add-generation-prompt";
    if (!c["kwargs"].empty()) args += " --kwargs " + quote(c["kwargs"].dump());
    ASSERT_EQ(run_template(args, tmp / "out.txt"), 0) << slurp(tmp / "out.txt.err");
    EXPECT_EQ(slurp(tmp / "out.txt"), c["expected"].get<std::string>());
    ++checked;
  }
  EXPECT_GE(checked, 10);
  // A template error: non-zero status, the message on stderr, nothing on stdout.
  std::ofstream(tmp / "bad.jinja") << "{{ raise_exception('no system role here') }}";
  EXPECT_NE(run_template(quote((tmp / "bad.jinja").string()) + " --messages " + quote((tmp / "m.json").string()),
                         tmp / "out.txt"),
            0);
  EXPECT_EQ(slurp(tmp / "out.txt"), "");
  EXPECT_NE(slurp(tmp / "out.txt.err").find("no system role here"), std::string::npos);
  fs::remove_all(tmp);
}

}  // namespace
