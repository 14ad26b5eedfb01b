// llama.cpp's own vocabulary tests (NOTE [GGUF pre-tokenizers]): every models/ggml-vocab-*.gguf
// of the llama.cpp tree in llama-cpp-python's sdist with its .inp (texts separated by
// "\n__ggml_vocab_test__\n") and .out (one line of ids per text, written by Hugging Face
// `tokenizers` through llama.cpp's convert_hf_to_gguf_update.py) must encode line for line, as
// llama.cpp's test-tokenizer-0 checks them (no special tokens added). The files (about 60 MB)
// are not committed: tools/fetch_llama_vocab.py copies them into outputs/llama-vocab/
// ($SPORE_LLAMA_VOCAB_DIR overrides); without them the test skips and says so.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/gguf_test_writer.h"
#include "nlp/tokenizer/gguf_pre_table.h"
#include "spore/error.h"
#include "spore/format.h"
#include "spore/gguf.h"
#include "spore/nlp/tokenizer.h"

namespace {

namespace fs = std::filesystem;

fs::path vocab_dir() {
  if (const char* d = std::getenv("SPORE_LLAMA_VOCAB_DIR")) return d;
  return fs::path(SPORE_SOURCE_DIR) / "outputs" / "llama-vocab";
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Case {
  std::string text;
  std::vector<int32_t> ids;
};

std::vector<Case> read_cases(const fs::path& gguf) {
  const std::string inp = read_all(gguf.string() + ".inp");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  for (size_t pos = 0; pos < inp.size();) {
    const size_t next = inp.find(sep, pos);
    if (next == std::string::npos) {
      texts.push_back(inp.substr(pos));
      break;
    }
    texts.push_back(inp.substr(pos, next - pos));
    pos = next + sep.size();
  }
  std::istringstream out(read_all(gguf.string() + ".out"));
  std::vector<Case> cases;
  std::string line;
  for (size_t i = 0; std::getline(out, line); ++i) {
    Case c;
    c.text = i < texts.size() ? texts[i] : std::string();
    std::istringstream ids(line);
    for (int32_t id; ids >> id;) c.ids.push_back(id);
    cases.push_back(std::move(c));
  }
  EXPECT_EQ(cases.size(), texts.size()) << gguf;
  return cases;
}

TEST(TokenizerLlamaVocab, EveryVocabularyTestPassesLineForLine) {
  const fs::path dir = vocab_dir();
  std::vector<fs::path> files;
  if (fs::is_directory(dir))
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".gguf" && fs::exists(e.path().string() + ".inp") &&
          fs::exists(e.path().string() + ".out"))
        files.push_back(e.path());
  if (files.empty())
    GTEST_SKIP() << "no llama.cpp vocabulary tests in " << dir
                 << ": run `python3 tools/fetch_llama_vocab.py` (or set SPORE_LLAMA_VOCAB_DIR)";
  std::sort(files.begin(), files.end());
  int passed_files = 0;
  for (const fs::path& f : files) {
    const std::string name = f.filename().string();
    SCOPED_TRACE(name);
    const spore::GgufFile g(f);
    const spore::nlp::Tokenizer tok = spore::nlp::Tokenizer::from_gguf(g);
    const std::vector<Case> cases = read_cases(f);
    int bad = 0;
    for (const Case& c : cases) {
      const std::vector<int32_t> got = tok.encode(c.text);
      if (got != c.ids && ++bad <= 3) {
        std::ostringstream want, have;
        for (int32_t id : c.ids) want << id << ' ';
        for (int32_t id : got) have << id << ' ';
        ADD_FAILURE() << name << ": text '" << c.text << "'\n  want " << want.str() << "\n  got  " << have.str();
      }
    }
    EXPECT_EQ(bad, 0) << name << ": " << bad << " of " << cases.size() << " texts differ";
    if (bad == 0) ++passed_files;
    std::printf("[ vocab    ] %-36s %s (%zu texts)\n", name.c_str(), bad == 0 ? "pass" : "FAIL", cases.size());
  }
  EXPECT_EQ(passed_files, (int)files.size());
}

// The pre-tokenizers no vocabulary test covers and llama.cpp splits by hand (kimi-k2, afmoe, and
// the "whitespace" vocabulary): a vocabulary test file renamed to each
// (tools/make_pre_tokenizer_fixtures.py) must give Hugging Face's ids under each model's own split
// (tests/fixtures/tokenizers/llama_pre_renamed.json). The fixture also holds llama.cpp's ids (its
// hand-written splitters), which differ where its Kimi K2 splitter keeps case runs together and
// where its AFMoE one glues a whitespace run to the digits after it; its whitespace session cuts at
// whitespace only, which on these texts gives the model's ids.
TEST(TokenizerLlamaVocab, HandSplitPreTokenizersMatchTheirModelsSplits) {
  std::ifstream in(fs::path(SPORE_SOURCE_DIR) / "tests/fixtures/tokenizers/llama_pre_renamed.json");
  ASSERT_TRUE(in);
  const auto fixture = nlohmann::json::parse(in);
  int names = 0;
  for (const auto& [name, spec] : fixture.at("cases").items()) {
    SCOPED_TRACE(name);
    const fs::path base = vocab_dir() / spec.at("base").get<std::string>();
    if (!fs::exists(base)) continue;
    ASSERT_EQ(spore::sha256_file(base), spec.at("base_sha256").get<std::string>())
        << base << " is not the file the fixture was made from: rerun tools/make_pre_tokenizer_fixtures.py";
    const spore::GgufFile g(base);
    std::vector<int32_t> types;
    for (int64_t t : g.get_ints("tokenizer.ggml.token_type")) types.push_back((int32_t)t);
    spore::testing::GgufWriter w;
    w.add_string("tokenizer.ggml.model", spec.at("model").get<std::string>());
    w.add_string("tokenizer.ggml.pre", name);
    w.add_strings("tokenizer.ggml.tokens", g.get_strings("tokenizer.ggml.tokens"));
    w.add_i32s("tokenizer.ggml.token_type", types);
    w.add_strings("tokenizer.ggml.merges", g.get_strings("tokenizer.ggml.merges"));
    const spore::nlp::Tokenizer tok = spore::nlp::Tokenizer::from_gguf(spore::GgufFile::from_bytes(w.bytes(), name + ".gguf"));
    int same_as_llama_cpp = 0;
    const auto& cases = spec.at("texts");
    for (const auto& c : cases) {
      const std::string text = c.at("text");
      const std::vector<int32_t> got = tok.encode(text);
      EXPECT_EQ(got, c.at("ids").get<std::vector<int32_t>>()) << "text '" << text << "'";
      same_as_llama_cpp += got == c.at("llama_cpp_ids").get<std::vector<int32_t>>();
    }
    std::printf("[ pre      ] %-10s %zu texts as the model splits them; llama.cpp gives the same ids on %d\n",
                name.c_str(), cases.size(), same_as_llama_cpp);
    ++names;
  }
  if (names == 0)
    GTEST_SKIP() << "the base vocabularies are missing from " << vocab_dir()
                 << ": run `python3 tools/fetch_llama_vocab.py` (or set SPORE_LLAMA_VOCAB_DIR)";
  EXPECT_EQ(names, (int)fixture.at("cases").size()) << "some base vocabularies are missing from " << vocab_dir();
}

// A byte-level GGUF vocabulary of the 256 byte tokens and one merge ("a" + "b"), named `pre`.
spore::GgufFile byte_vocab(const std::string& pre) {
  spore::testing::GgufWriter w;
  w.add_string("tokenizer.ggml.model", "gpt2");
  w.add_string("tokenizer.ggml.pre", pre);
  // GPT-2's byte-to-character map: printable Latin-1 bytes stand for themselves, the rest
  // (controls, space, ...) for 256 + k in byte order.
  std::vector<std::string> tokens;
  int shifted = 0;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
    const uint32_t cp = printable ? b : 256 + shifted++;
    std::string s;
    if (cp < 0x80) {
      s += (char)cp;
    } else {
      s += (char)(0xC0 | (cp >> 6));
      s += (char)(0x80 | (cp & 0x3F));
    }
    tokens.push_back(s);
  }
  tokens.push_back("ab");
  w.add_strings("tokenizer.ggml.tokens", tokens);
  w.add_strings("tokenizer.ggml.merges", {"a b"});
  return spore::GgufFile::from_bytes(w.bytes(), pre + ".gguf");
}

// Every row of the table loads (its regexes compile in PCRE2) and splits a text of letters,
// digits, punctuation, newlines and CJK into pieces whose bytes give back the text.
TEST(TokenizerGgufPreTable, EveryNameLoadsAndRoundTrips) {
  const std::string text = "Hello, y'all! 3333 \n\n  tabs\tand \xE6\x88\x91\xE6\x83\xB3 IMGIMGAZ <sentinel:1> ab";
  int names = 0;
  for (const auto& row : spore::nlp::detail::gguf_pre_tokenizers())
    for (const char* name : row.names) {
      SCOPED_TRACE(name);
      const spore::nlp::Tokenizer t = spore::nlp::Tokenizer::from_gguf(byte_vocab(name));
      const std::vector<int32_t> ids = t.encode(text);
      EXPECT_EQ(t.decode(ids), text);
      ++names;
    }
  EXPECT_GT(names, 80);
}

TEST(TokenizerGgufPreTable, UnknownNameIsUnsupportedNamingTheFieldAndTheNames) {
  try {
    spore::nlp::Tokenizer::from_gguf(byte_vocab("no-such-pre"));
    ADD_FAILURE() << "loaded";
  } catch (const spore::Error& e) {
    EXPECT_EQ(e.code(), spore::ErrorCode::kUnsupported);
    const std::string m = e.what();
    EXPECT_NE(m.find("tokenizer.ggml.pre 'no-such-pre'"), std::string::npos) << m;
    EXPECT_NE(m.find("deepseek-coder"), std::string::npos) << m;
    EXPECT_NE(m.find("chatglm-bpe"), std::string::npos) << m;
  }
}

}  // namespace
