// Embeddings of the encoder fixtures (tools/make_embedding_fixtures.py, NOTE [Embeddings])
// against transformers: BERT and nomic-bert from their Hugging Face directories and from the GGUF
// llama.cpp's own converter wrote, pooled (mean as sentence-transformers computes it, CLS) and
// L2-normalised, within 1e-4; the token ids of transformers' WordPiece tokenizer; a cross-encoder's
// scores; and the errors of bad inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model_test_util.h"
#include "spore/error.h"
#include "spore/nlp/embed.h"
#include "spore/ops.h"

namespace spore::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path fixture(const std::string& name) { return fs::path(SPORE_SOURCE_DIR) / "tests" / "fixtures" / "embed" / name; }

json reference(const std::string& name) {
  std::ifstream in(fixture(name) / "reference.json");
  return json::parse(in);
}

double max_diff(const std::vector<float>& a, const json& b) {
  if (a.size() != b.size()) return INFINITY;
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(static_cast<double>(a[i]) - b[i].get<double>()));
  return d;
}

struct Case {
  std::string dir, model;  // fixture folder, and the path under it to load ("" = the HF directory)
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.dir << "/" << c.model; }

class EmbedFixture : public ::testing::TestWithParam<Case> {};

TEST_P(EmbedFixture, TokensAndPooledVectorsMatchTransformers) {
  const Case& c = GetParam();
  const json ref = reference(c.dir);
  const fs::path path = c.model.empty() ? fixture(c.dir) : fixture(c.dir) / c.model;
  for (const char* pooling : {"mean", "cls"}) {
    nlp::EmbeddingLoadOptions o;
    o.pooling = nlp::parse_pooling(pooling);
    const auto m = nlp::load_embedding_model(path, o);
    EXPECT_TRUE(m.is_encoder());
    EXPECT_EQ(m.dimensions(), 32);
    std::vector<std::vector<int32_t>> ids;
    for (const auto& t : ref["texts"]) {
      ids.push_back(m.tokenize(t["text"].get<std::string>()));
      EXPECT_EQ(ids.back(), t["ids"].get<std::vector<int32_t>>()) << path << ": " << t["text"];
    }
    const auto vectors = m.embed(ids);
    ASSERT_EQ(vectors.size(), ref["texts"].size());
    for (size_t i = 0; i < vectors.size(); ++i)
      EXPECT_LT(max_diff(vectors[i], ref["texts"][i][pooling]), 1e-4) << path << " " << pooling << " text " << i;
  }
}

// The GGUFs through llama.cpp itself (llama-cpp-python 0.3.36's library, what llama-embedding
// runs): the same ids, and its mean-pooled vectors. ggml's GELU is the tanh form where BERT's is
// erf, so bert differs from llama.cpp by up to ~1e-4 and from transformers by far less;
// nomic-bert (SwiGLU) agrees to 1e-6.
TEST(Embed, GgufMatchesLlamaCpp) {
  for (const auto& [dir, tol] : std::vector<std::pair<std::string, double>>{{"bert", 2e-4}, {"nomic_bert", 1e-6}}) {
    const json ref = reference(dir);
    const auto m = nlp::load_embedding_model(fixture(dir) / "model.gguf");
    for (const auto& t : ref["texts"]) {
      const auto ids = m.tokenize(t["text"].get<std::string>());
      EXPECT_EQ(ids, t["llama_cpp_ids"].get<std::vector<int32_t>>()) << dir << ": " << t["text"];
      EXPECT_LT(max_diff(m.embed({ids})[0], t["llama_cpp"]), tol) << dir << ": " << t["text"];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, EmbedFixture,
                         ::testing::Values(Case{"bert", ""}, Case{"bert", "model.gguf"}, Case{"nomic_bert", ""},
                                           Case{"nomic_bert", "model.gguf"}),
                         [](const auto& info) {
                           return info.param.dir + (info.param.model.empty() ? "_hf" : "_gguf");
                         });

// The pooling the artifact names: sentence-transformers' 1_Pooling (mean) and GGUF pooling_type 1.
TEST(Embed, PoolingComesFromTheArtifact) {
  EXPECT_EQ(nlp::load_embedding_model(fixture("bert")).pooling(), nlp::Pooling::kMean);
  EXPECT_EQ(nlp::load_embedding_model(fixture("bert") / "model.gguf").pooling(), nlp::Pooling::kMean);
  EXPECT_EQ(nlp::load_embedding_model(fixture("bert_rerank")).pooling(), nlp::Pooling::kRank);
  EXPECT_TRUE(nlp::is_encoder_model(fixture("nomic_bert")));
  EXPECT_TRUE(nlp::is_encoder_model(fixture("nomic_bert") / "model.gguf"));
  EXPECT_FALSE(nlp::is_encoder_model(fixture("missing")));
}

// Asked to generate, an encoder says what to use instead.
TEST(Embed, GeneratingWithAnEncoderNamesSporeEmbed) {
  for (const fs::path& p : {fixture("bert"), fixture("nomic_bert") / "model.gguf"}) {
    try {
      nlp::load_model(p);
      ADD_FAILURE() << p << " loaded as a causal LM";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
      EXPECT_NE(std::string(e.what()).find("spore embed"), std::string::npos) << e.what();
    }
  }
}

// Several inputs in one call run through the projections together; each attends only to
// itself, so a batch gives the vectors each input gives alone.
TEST(Embed, BatchEqualsOneByOne) {
  const auto m = nlp::load_embedding_model(fixture("nomic_bert"));
  const json ref = reference("nomic_bert");
  std::vector<std::vector<int32_t>> ids;
  for (const auto& t : ref["texts"]) ids.push_back(m.tokenize(t["text"].get<std::string>()));
  const auto all = m.embed(ids);
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto one = m.embed({ids[i]});
    for (size_t k = 0; k < one[0].size(); ++k) EXPECT_NEAR(one[0][k], all[i][k], 1e-6);
  }
}

TEST(Embed, CrossEncoderScoresMatchTransformers) {
  const auto m = nlp::load_embedding_model(fixture("bert_rerank"));
  ASSERT_TRUE(m.can_rerank());
  const json ref = reference("bert_rerank");
  std::vector<std::string> docs;
  for (const auto& d : ref["documents"]) docs.push_back(d["text"]);
  int64_t tokens = 0;
  const auto scores = m.rerank(ref["query"].get<std::string>(), docs, &tokens);
  ASSERT_EQ(scores.size(), docs.size());
  int64_t expected_tokens = 0;
  for (size_t i = 0; i < docs.size(); ++i) {
    EXPECT_NEAR(scores[i], ref["documents"][i]["score"].get<double>(), 1e-4) << docs[i];
    expected_tokens += static_cast<int64_t>(ref["documents"][i]["ids"].size());
  }
  EXPECT_EQ(tokens, expected_tokens);
  // An embedding model is no cross-encoder.
  EXPECT_THROW(nlp::load_embedding_model(fixture("bert")).rerank("q", {"d"}), Error);
}

TEST(Embed, BadInputsAreValueErrors) {
  const auto m = nlp::load_embedding_model(fixture("bert"));
  auto code = [&](const std::vector<std::vector<int32_t>>& in) {
    try {
      m.embed(in);
    } catch (const Error& e) {
      return e.code();
    }
    return ErrorCode::kInternal;
  };
  EXPECT_EQ(code({{}}), ErrorCode::kValue);
  EXPECT_EQ(code({{2, 1000000, 3}}), ErrorCode::kValue);
  EXPECT_EQ(code({{2, -1, 3}}), ErrorCode::kValue);
  EXPECT_EQ(code({std::vector<int32_t>(static_cast<size_t>(m.context()) + 1, 5)}), ErrorCode::kValue);
  EXPECT_NO_THROW(m.embed({std::vector<int32_t>(static_cast<size_t>(m.context()), 5)}));
  EXPECT_THROW(nlp::parse_pooling("max"), Error);
}

// tokenizer.json's WordPiece pieces as transformers 5.25 gives them for the fixture's vocabulary
// (its outputs written here): a word over max_input_chars_per_word (100) is one [UNK]; decoding
// drops "##" and the WordPiece decoder's per-token cleanup leaves " '" alone.
TEST(Embed, WordPieceTokenizerJsonMatchesTransformers) {
  const auto tok = nlp::Tokenizer::from_file(fixture("bert") / "tokenizer.json");
  EXPECT_EQ(tok.encode(std::string(101, 'a'), true), (std::vector<int32_t>{2, 1, 3}));
  EXPECT_EQ(tok.encode(std::string(100, 'a'), true).size(), 102u);
  EXPECT_EQ(tok.encode("Caf\u00e9, d\u00e9j\u00e0!", true), (std::vector<int32_t>{2, 110, 78, 111, 79, 3}));
  const auto ids = tok.encode("unaffable running runner's: 42 + 7 = 49", true);
  EXPECT_EQ(ids.size(), 19u);
  EXPECT_EQ(tok.decode(ids, /*skip_special_tokens=*/true), "unaffable running runner ' s : 42 + 7 = 49");
  EXPECT_EQ(tok.decode(tok.encode("Caf\u00e9, d\u00e9j\u00e0!", true), true), "cafe, deja!");
}

// A decoder's token vectors (what its embeddings pool) are the final norm's output: times the
// tied embedding table they give transformers' logits (qwen2's fixture, every position).
TEST(Embed, DecoderHiddenStatesAreTheHeadsInput) {
  const llm::Reference ref = llm::load_reference("qwen2");
  const auto m = nlp::load_model(llm::fixture_model("qwen2", false));
  const SafeTensors w = load_safetensors(llm::fixture_model("qwen2", false) / "model.safetensors");
  const Tensor& table = w.at("model.embed_tokens.weight");
  auto cache = m.lm->make_cache(1, static_cast<int64_t>(ref.prompts[0].size()), DType::kFloat32);
  nlp::SequenceChunk c{0, 0, ref.prompts[0], /*all_logits=*/true};
  const Tensor h = m.lm->forward_hidden({&c, 1}, *cache);
  ASSERT_EQ(h.shape(), Shape({static_cast<int64_t>(ref.prompts[0].size()), m.lm->config().hidden_size}));
  EXPECT_LT(llm::logits_diff(matmul(h, transpose(table, 0, 1)), ref.logits.at("logits_0")), 1e-4);
}

}  // namespace
}  // namespace spore::test
