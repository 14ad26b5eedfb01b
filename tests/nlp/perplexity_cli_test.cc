// `spore perplexity` against llama.cpp's own llama-perplexity (NOTE [Perplexity]): the figures
// tools/make_perplexity_fixtures.py recorded in tests/fixtures/perplexity/llama_cpp_ppl.json for
// the embedded SmolLM2 (scripts/fetch-model.sh) and its re-quantizations by llama-quantize
// (build/peers/ppl-models/, made by the same tool) must agree within 0.5%. Files not present are
// skipped, saying why; usage errors need no model.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "spore/format.h"
#include "spore_cli_run.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

namespace fs = std::filesystem;
const std::string& kSpore = spore::test::spore_binary();
const fs::path kSource = SPORE_SOURCE_DIR;

using spore::test::CliRun;
CliRun run(const std::string& args) { return spore::test::run_spore(args, "", "spore_ppl_cli"); }

nlohmann::json last_json_line(const std::string& out) {
  const size_t end = out.find_last_not_of('\n');
  const size_t begin = out.rfind('\n', end);
  return nlohmann::json::parse(out.substr(begin == std::string::npos ? 0 : begin + 1, end + 1 - (begin + 1)));
}

TEST(PerplexityCli, UsageErrorsNeedNoModel) {
  ASSERT_TRUE(fs::exists(kSpore)) << "build spore_cli first";
  CliRun r = run("perplexity --ctx 128");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--file"), std::string::npos) << r.err;
  r = run("perplexity --file /nonexistent/text.txt --model " + (kSource / "tests/fixtures/llm/llama/hf").string());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("/nonexistent/text.txt"), std::string::npos) << r.err;
  r = run("perplexity --file x --ctx 0");
  EXPECT_EQ(r.status, 2);
  r = run("perplexity --help");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("spore perplexity --model"), std::string::npos) << r.out;
}

TEST(PerplexityCli, MatchesLlamaPerplexityWithinHalfAPercent) {
  std::ifstream in(kSource / "tests/fixtures/perplexity/llama_cpp_ppl.json");
  ASSERT_TRUE(in) << "tests/fixtures/perplexity/llama_cpp_ppl.json is missing";
  const auto fixture = nlohmann::json::parse(in);
  const std::string text = (kSource / fixture.at("text").get<std::string>()).string();
  int compared = 0;
  std::string skipped;
  for (const auto& run_ref : fixture.at("runs")) {
    const fs::path model = kSource / run_ref.at("file").get<std::string>();
    const std::string ftype = run_ref.at("ftype");
    if (!fs::exists(model)) {
      skipped += " " + ftype;
      continue;
    }
    // The very file llama-perplexity ran (another llama.cpp quantizes differently).
    ASSERT_EQ(spore::sha256_file(model), run_ref.at("sha256").get<std::string>())
        << model << " is not the file the fixture was made from: rerun tools/make_perplexity_fixtures.py";
    // The whole text, as llama-perplexity ran it: partial estimates over a few chunks differ by
    // up to ~1.5% (llama.cpp's flash attention and prompt kernels round differently; NOTE
    // [Perplexity]), the figure over all chunks is what the 0.5% is about.
    const int64_t ctx = run_ref.at("ctx");
    const CliRun r = run("perplexity --model " + model.string() + " --file " + text + " --ctx " + std::to_string(ctx));
    ASSERT_EQ(r.status, 0) << ftype << ": " << r.err;
    const auto got = last_json_line(r.out);
    const double want = run_ref.at("ppl");
    const int64_t chunks = run_ref.at("chunks");
    EXPECT_EQ(got.at("chunks").get<int64_t>(), chunks) << ftype;
    EXPECT_EQ(got.at("running").size(), (size_t)chunks) << ftype;
    EXPECT_NEAR(got.at("ppl").get<double>() / want, 1.0, 0.005)
        << ftype << ": spore " << got.at("ppl") << ", llama.cpp " << want;
    EXPECT_NEAR(got.at("ppl_error").get<double>() / run_ref.at("ppl_error").get<double>(), 1.0, 0.02) << ftype;
    // The human-readable lines: one per chunk, then the estimate with its error bar.
    EXPECT_NE(r.out.find("Final estimate: PPL = "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("[" + std::to_string(chunks) + "/" + std::to_string(chunks) + "]"), std::string::npos) << r.out;
    std::printf("[ ppl      ] %-16s spore %.4f  llama.cpp %.4f  (%+.3f%%)\n", ftype.c_str(), got.at("ppl").get<double>(),
                want, 100 * (got.at("ppl").get<double>() / want - 1));
    ++compared;
  }
  if (compared == 0)
    GTEST_SKIP() << "none of the fixture's models is here (" << skipped
                 << "): bash scripts/fetch-model.sh; python3 tools/make_perplexity_fixtures.py for the others";
}

}  // namespace
