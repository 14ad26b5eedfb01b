// The mixture-of-experts families (NOTE [Mixture of experts]): qwen3moe, qwen2moe (shared expert
// behind a sigmoid gate), mixtral (GGUF "llama" with experts) and deepseek2 (latent attention,
// dense first layer, shared experts, routed scaling). Their tiny random-weight fixtures
// (tools/make_llm_fixtures.py; the script checks the router's top-k margins) against Hugging Face
// transformers' float32 logits and greedy tokens, from safetensors, from the GGUF spore convert
// writes (stacking the per-expert tensors), and from the GGUF llama.cpp's own convert_hf_to_gguf.py
// wrote (model-llama-cpp.gguf). Then the router against a brute-force reference, the block reading
// only the chosen experts, and the bad inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "model_test_util.h"
#include "repack_test_util.h"
#include "nlp/model_internal.h"
#include "nlp/models/family.h"
#include "nlp/models/moe.h"
#include "spore/gguf.h"
#include "spore/nlp/convert.h"
#include "test_util.h"

namespace spore::test::llm {
namespace {

const std::vector<std::string> kMoe = {"qwen3moe", "qwen2moe", "mixtral", "deepseek2"};

enum class Source { kHf, kSporeConvert, kLlamaCpp };

// A byte-level BPE tokenizer.json of the fixtures' 256 ids: spore convert writes the tokenizer too.
void write_tokenizer_json(const std::filesystem::path& dir) {
  nlohmann::json vocab = {{"a", 0}, {"b", 1}, {"ab", 2}};
  for (int i = 3; i < 256; ++i) vocab[std::string("t").append(std::to_string(i))] = i;
  const nlohmann::json model = {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"a b"}}};
  write_text(dir / "tokenizer.json", nlohmann::json{{"model", model}, {"pre_tokenizer", {{"type", "ByteLevel"}}}}.dump());
}

// spore convert's GGUF of a fixture, written once per process into a scratch directory that is
// removed at exit.
std::filesystem::path spore_converted(const std::string& family) {
  struct Scratch {
    std::map<std::string, std::filesystem::path> files;
    ~Scratch() {
      for (const auto& [f, path] : files) std::filesystem::remove_all(path.parent_path());
    }
  };
  static Scratch done;
  auto it = done.files.find(family);
  if (it != done.files.end()) return it->second;
  const auto dir = scratch_copy(family, "moe_convert");
  write_tokenizer_json(dir);
  const auto out = dir / (family + ".gguf");
  nlp::convert_hf_to_gguf(dir, out, {.type = "f32", .name = "", .progress = {}});
  return done.files[family] = out;
}

std::filesystem::path model_path(const std::string& family, Source s) {
  switch (s) {
    case Source::kHf: return fixture_model(family, false);
    case Source::kSporeConvert: return spore_converted(family);
    case Source::kLlamaCpp: return fixture_dir(family) / "model-llama-cpp.gguf";
  }
  return {};
}

const char* source_name(Source s) {
  return s == Source::kHf ? "hf" : s == Source::kSporeConvert ? "spore_convert" : "llama_cpp";
}

class MoeFixtureTest : public ::testing::TestWithParam<std::tuple<std::string, Source>> {};

TEST_P(MoeFixtureTest, LogitsMatchTransformers) {
  const auto& [family, source] = GetParam();
  const Reference ref = load_reference(family);
  const auto m = nlp::load_model(model_path(family, source));
  EXPECT_EQ(m.lm->config().family, family);
  EXPECT_GT(m.lm->config().extra.at("num_experts"), 0);
  for (size_t i = 0; i < ref.prompts.size(); ++i) {
    auto cache = m.lm->make_cache(1, (int64_t)ref.prompts[i].size(), DType::kFloat32);
    nlp::SequenceChunk c{0, 0, ref.prompts[i], /*all_logits=*/true};
    EXPECT_LT(logits_diff(m.lm->forward({&c, 1}, *cache), ref.logits.at("logits_" + std::to_string(i))), 1e-4)
        << family << " " << source_name(source) << " prompt " << i;
  }
}

// Decode routes one token at a time (each step reads only its top-k experts).
TEST_P(MoeFixtureTest, GreedyTokensMatchTransformers) {
  const auto& [family, source] = GetParam();
  const Reference ref = load_reference(family);
  const auto m = nlp::load_model(model_path(family, source));
  ASSERT_EQ(ref.greedy.size(), 16u);
  EXPECT_EQ(greedy(*m.lm, ref.prompts[0], (int)ref.greedy.size(), DType::kFloat32), ref.greedy);
}

INSTANTIATE_TEST_SUITE_P(Families, MoeFixtureTest,
                         ::testing::Combine(::testing::ValuesIn(kMoe),
                                            ::testing::Values(Source::kHf, Source::kSporeConvert, Source::kLlamaCpp)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + source_name(std::get<1>(info.param));
                         });

// Quantized experts: spore convert --type q8_0 writes the stacked gate/up experts as Q8_0 (down's
// rows of 16 fall back to F16, as llama.cpp's do) and the router F32. Each expert's slice of the
// blocks is that expert's Hugging Face matrix within Q8_0's rounding (half a step of amax / 127 per
// block of 32), runs through matmul_q in place (nothing resident), and agrees with the product of
// its dequantised rows (the kernel also rounds x to q8 blocks: 2e-2 here).
TEST(MoeQuantized, Q8_0ExpertSlicesAreTheirExperts) {
  const auto dir = scratch_copy("qwen3moe", "q8");
  write_tokenizer_json(dir);
  const auto out = dir / "q8.gguf";
  const auto report = nlp::convert_hf_to_gguf(dir, out, {.type = "q8_0", .name = "", .progress = {}});
  std::map<std::string, GgmlType> types;
  for (const auto& t : report.tensors) types[t.name] = t.type;
  EXPECT_EQ(types.at("blk.1.ffn_gate_exps.weight"), GgmlType::kQ8_0);
  EXPECT_EQ(types.at("blk.1.ffn_down_exps.weight"), GgmlType::kF16);
  EXPECT_EQ(types.at("blk.1.ffn_gate_inp.weight"), GgmlType::kF32);  // routers stay F32
  nlp::LoadOptions o;
  o.numerics = nlp::LoadOptions::Numerics::kReference;
  // the stacked experts stay in place; only the 2-D q8_0 matrices are repacked at load
  EXPECT_EQ(nlp::load_model(out, o).lm->weight_memory().weights_resident, repacked_bytes(out));

  const auto ws = nlp::open_gguf_weights(std::make_shared<GgufFile>(out));
  const auto experts = ws->stacked("blk.1.ffn_gate_exps.weight", 8, 16, 32);
  const SafeTensors hf = load_safetensors(fixture_model("qwen3moe", false) / "model.safetensors");
  std::vector<float> xv(3 * 32);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = std::sin(0.37f * (float)i);
  const Tensor x = Tensor::from_vector(xv, Shape{3, 32});
  for (int64_t e = 0; e < 8; ++e) {
    ASSERT_EQ(experts[e].qtype, GgmlType::kQ8_0);
    const auto want = hf.at("model.layers.1.mlp.experts." + std::to_string(e) + ".gate_proj.weight").to_vector<float>();
    const Tensor deq = nlp::weight_to_float(experts[e]);
    const auto got = deq.to_vector<float>();
    double amax = 0, err = 0;
    for (size_t i = 0; i < want.size(); ++i) amax = std::max(amax, std::fabs((double)want[i]));
    for (size_t i = 0; i < want.size(); ++i) err = std::max(err, std::fabs((double)want[i] - got[i]));
    EXPECT_LE(err, amax / 254 * 1.01) << "expert " << e;
    EXPECT_LT(logits_diff(nlp::linear(x, experts[e]), matmul(x, transpose(deq, 0, 1))), 2e-2) << "expert " << e;
  }
  std::filesystem::remove_all(dir);
}

// config.json and llama.cpp's GGUF metadata describe the same routing.
TEST(MoeConfig, HfAndLlamaCppGgufAgree) {
  for (const auto& family : kMoe) {
    const auto a = nlp::ModelConfig::from_hf_json(fixture_model(family, false) / "config.json");
    const auto b = nlp::ModelConfig::from_gguf(GgufFile(fixture_dir(family) / "model-llama-cpp.gguf"));
    EXPECT_EQ(a.family, b.family);
    for (const char* key : {"num_experts", "num_experts_per_tok", "moe_intermediate_size", "norm_topk_prob",
                            "shared_expert_intermediate_size"})
      EXPECT_EQ(a.extra.at(key), b.extra.at(key)) << family << " " << key;
    EXPECT_EQ(a.head_dim, b.head_dim) << family;
    EXPECT_EQ(a.v_head_dim, b.v_head_dim) << family;
    EXPECT_EQ(a.num_kv_heads, b.num_kv_heads) << family;
  }
  const auto d = nlp::ModelConfig::from_gguf(GgufFile(fixture_dir("deepseek2") / "model-llama-cpp.gguf"));
  EXPECT_EQ(d.extra.at("first_k_dense_replace"), 1);
  EXPECT_EQ(d.extra.at("routed_scaling_factor"), 2.0);
}

// ---- the router against a brute-force reference ----

// The reference: scores, then every expert ranked by how many others beat it (ties: lower index
// first), the group limit by each group's best score, exactly as transformers' routers describe.
nlp::models::Routing brute_route(const std::vector<float>& logits, int64_t n, const nlp::models::MoeOptions& o) {
  nlp::models::Routing r;
  const int64_t E = o.experts;
  for (int64_t t = 0; t < n; ++t) {
    std::vector<double> p(E);
    double z = 0;
    for (int64_t e = 0; e < E; ++e) z += std::exp((double)logits[t * E + e]);
    for (int64_t e = 0; e < E; ++e)
      p[e] = o.gating == nlp::models::Gating::kSoftmax ? std::exp((double)logits[t * E + e]) / z
                                                       : 1 / (1 + std::exp(-(double)logits[t * E + e]));
    std::vector<bool> allowed(E, true);
    if (o.groups > 1) {
      const int64_t per = E / o.groups;
      std::vector<double> best(o.groups, -1e300);
      for (int64_t e = 0; e < E; ++e) best[e / per] = std::max(best[e / per], p[e]);
      for (int64_t g = 0; g < o.groups; ++g) {
        int64_t better = 0;
        for (int64_t h = 0; h < o.groups; ++h) better += best[h] > best[g] || (best[h] == best[g] && h < g);
        if (better >= o.top_groups)
          for (int64_t e = g * per; e < (g + 1) * per; ++e) allowed[e] = false;
      }
    }
    std::vector<std::pair<int64_t, int64_t>> rank;  // (rank, expert)
    for (int64_t e = 0; e < E; ++e) {
      if (!allowed[e]) continue;
      int64_t better = 0;
      for (int64_t f = 0; f < E; ++f) better += allowed[f] && (p[f] > p[e] || (p[f] == p[e] && f < e));
      rank.emplace_back(better, e);
    }
    std::sort(rank.begin(), rank.end());
    double sum = 0;
    for (int64_t j = 0; j < o.top_k; ++j) sum += p[rank[j].second];
    for (int64_t j = 0; j < o.top_k; ++j) {
      r.experts.push_back((int32_t)rank[j].second);
      r.weights.push_back((float)((o.normalize ? p[rank[j].second] / sum : p[rank[j].second]) * o.scale));
    }
  }
  return r;
}

TEST(MoeRouter, MatchesBruteForceForEveryVariant) {
  const int64_t n = 40, E = 8;
  std::vector<float> logits(n * E);
  uint64_t s = 0x9e3779b97f4a7c15ull;
  for (float& v : logits) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    v = (float)((s >> 11) % 20000) / 5000.0f - 2.0f;
  }
  for (auto gating : {nlp::models::Gating::kSoftmax, nlp::models::Gating::kSigmoid})
    for (bool normalize : {false, true})
      for (auto [groups, top_groups] : {std::pair<int64_t, int64_t>{0, 0}, {4, 2}, {2, 1}}) {
        nlp::models::MoeOptions o;
        o.experts = E, o.top_k = 2, o.gating = gating, o.normalize = normalize, o.scale = normalize ? 1.0 : 2.5;
        o.groups = groups, o.top_groups = top_groups;
        const auto got = nlp::models::route(logits, n, o), want = brute_route(logits, n, o);
        ASSERT_EQ(got.experts, want.experts) << "groups " << groups << " normalize " << normalize;
        for (size_t i = 0; i < want.weights.size(); ++i) EXPECT_NEAR(got.weights[i], want.weights[i], 1e-6);
      }
}

// The group limit changes the choice on these logits (so the variant above is exercised).
TEST(MoeRouter, GroupLimitExcludesWeakGroups) {
  // Experts 0..3 in group 0, 4..7 in group 1; group 1 holds the single best expert, group 0 the
  // second and third best: top-2 of one group picks 5 and 4, not 5 and 0.
  const std::vector<float> logits = {3.0f, 2.9f, 0.0f, 0.0f, 0.5f, 4.0f, 0.0f, 0.0f};
  nlp::models::MoeOptions o;
  o.experts = 8, o.top_k = 2;
  EXPECT_EQ(nlp::models::route(logits, 1, o).experts, (std::vector<int32_t>{5, 0}));
  o.groups = 2, o.top_groups = 1;
  EXPECT_EQ(nlp::models::route(logits, 1, o).experts, (std::vector<int32_t>{5, 4}));
}

// ---- only the chosen experts are read ----

nlp::Weight f32_weight(std::vector<float> v, int64_t rows, int64_t cols) {
  return nlp::Weight{Tensor::from_vector(v, Shape{rows, cols}), GgmlType::kF32, rows, cols};
}

// Experts the router does not choose hold NaN: any read of them (even times a zero weight) would
// turn the output NaN. The output equals the two chosen experts' weighted sum computed directly.
TEST(MoeBlock, ReadsOnlyTheChosenExperts) {
  const int64_t H = 4, F = 2, E = 4;
  nlp::models::MoeOptions o;
  o.experts = E, o.top_k = 2, o.expert_ffn = F, o.normalize = true;
  nlp::models::MoeWeights w;
  // Router rows: experts 1 and 3 score x[0] * 5 and x[1] * 4; 0 and 2 score -10 x[0].
  w.router = f32_weight({-10, 0, 0, 0, 5, 0, 0, 0, -10, 0, 0, 0, 0, 4, 0, 0}, E, H);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t e = 0; e < E; ++e) {
    const bool chosen = e == 1 || e == 3;
    std::vector<float> g(F * H), u(F * H), d(H * F);
    for (size_t i = 0; i < g.size(); ++i) {
      g[i] = chosen ? 0.1f * (float)(i + e) : nan;
      u[i] = chosen ? 0.2f - 0.05f * (float)i : nan;
      d[i] = chosen ? 0.3f * (float)((i * 7 + e) % 5) - 0.5f : nan;
    }
    w.gate.push_back(f32_weight(g, F, H));
    w.up.push_back(f32_weight(u, F, H));
    w.down.push_back(f32_weight(d, H, F));
  }
  const std::vector<float> x = {1.0f, 0.8f, -0.3f, 0.5f, 0.9f, 1.1f, 0.2f, -0.7f};  // 2 tokens
  const Tensor out = nlp::models::moe(w, o, Tensor::from_vector(x, Shape{2, H}), false);
  const auto got = out.to_vector<float>();
  for (int64_t t = 0; t < 2; ++t) {
    const double s1 = 5 * x[t * H], s3 = 4 * x[t * H + 1];
    const double w1 = 1 / (1 + std::exp(s3 - s1)), w3 = 1 - w1;  // renormalised softmax of the two
    for (int64_t c = 0; c < H; ++c) {
      double want = 0;
      for (auto [e, we] : {std::pair<int64_t, double>{1, w1}, {3, w3}}) {
        const auto G = w.gate[e].data.to_vector<float>(), U = w.up[e].data.to_vector<float>(),
                   D = w.down[e].data.to_vector<float>();
        double y = 0;
        for (int64_t f = 0; f < F; ++f) {
          double gv = 0, uv = 0;
          for (int64_t i = 0; i < H; ++i) gv += G[f * H + i] * x[t * H + i], uv += U[f * H + i] * x[t * H + i];
          y += D[c * F + f] * (gv / (1 + std::exp(-gv))) * uv;
        }
        want += we * y;
      }
      EXPECT_NEAR(got[t * H + c], want, 1e-5) << "token " << t << " column " << c;
    }
  }
}

// ---- bad input ----

TEST(MoeErrors, ExpertTensorsWithTheWrongLeadingDimension) {
  const auto bad = std::filesystem::path(SPORE_SOURCE_DIR) / "tests/fixtures/llm/bad/moe_bad_experts.gguf";
  expect_error([&] { nlp::load_model(bad); }, ErrorCode::kShape, "blk.0.ffn_gate_exps.weight", "[3, 4, 4]", "[4, 4, 4]");
  // The same file with the right dimension loads (the error is the dimension, nothing else).
  const auto ok = std::filesystem::path(SPORE_SOURCE_DIR) / "tests/fixtures/llm/bad/moe_ok.gguf";
  EXPECT_EQ(nlp::load_model(ok).lm->config().extra.at("num_experts"), 4);
}

TEST(MoeErrors, RouterShapeDisagreesWithTheConfig) {
  const auto dir = scratch_copy("qwen3moe", "router");
  nlohmann::json cfg = read_json(dir / "config.json");
  cfg["num_local_experts"] = 6;  // (transformers 5 writes Qwen's num_experts so)
  write_text(dir / "config.json", cfg.dump());
  expect_error([&] { nlp::load_model(dir); }, ErrorCode::kShape, "model.layers.0.mlp.gate.weight", "[8, 32]", "[6, 32]");
  std::filesystem::remove_all(dir);
}

// An expert tensor numbered past the table config.json declares: spore convert names it rather
// than stacking a table the loader would then reject.
TEST(MoeErrors, ConvertRefusesAnExpertOutsideTheTable) {
  const auto dir = scratch_copy("qwen2moe", "index");
  write_tokenizer_json(dir);
  nlohmann::json cfg = read_json(dir / "config.json");
  cfg["num_experts"] = 3;  // the weights hold experts 0..3
  write_text(dir / "config.json", cfg.dump());
  const auto out = dir / "out.gguf";
  expect_error([&] { nlp::convert_hf_to_gguf(dir, out, {.type = "f32", .name = "", .progress = {}}); },
               ErrorCode::kFormat, "experts.3.", "expert index 3", "3 experts");
  EXPECT_FALSE(std::filesystem::exists(out));
  std::filesystem::remove_all(dir);
}

TEST(MoeErrors, TopKBeyondTheExperts) {
  nlohmann::json cfg = read_json(fixture_model("mixtral", false) / "config.json");
  cfg["num_experts_per_tok"] = 5;
  expect_error([&] { nlp::config_from_json(cfg, "mixtral.json"); }, ErrorCode::kFormat, "mixtral.json",
               "num_experts_per_tok", "1..4");
  cfg["num_experts_per_tok"] = 2;
  cfg["num_local_experts"] = 0;
  expect_error([&] { nlp::config_from_json(cfg, "mixtral.json"); }, ErrorCode::kFormat, "expert count");
}

// deepseek2's routing variants from config.json: group_limited_greedy reads its groups (and the
// decoder's layers take them after the dense ones); groups that do not split the experts evenly
// or leave fewer than top-k to choose, and a scoring it does not run, are refused by name.
TEST(MoeConfig, Deepseek2RoutingVariantsAreReadAndChecked) {
  nlohmann::json j = read_json(fixture_model("deepseek2", false) / "config.json");
  j["topk_method"] = "group_limited_greedy";
  j["n_group"] = 4;
  j["topk_group"] = 2;
  const auto c = nlp::config_from_json(j, "ds.json");
  EXPECT_EQ(c.extra.at("n_group"), 4);
  EXPECT_EQ(c.extra.at("topk_group"), 2);
  const auto spec = nlp::models::find_family("deepseek2")->decoder(c);
  EXPECT_EQ(spec.layers[0].moe.experts, 0);  // first_k_dense_replace 1: a dense MLP
  EXPECT_EQ(spec.layers[1].moe.groups, 4);
  EXPECT_EQ(spec.layers[1].moe.top_groups, 2);
  EXPECT_EQ(spec.layers[1].moe.scale, 2.0);
  EXPECT_EQ(spec.layers[1].moe.shared_ffn, 32);  // 2 shared experts of 16
  j["n_group"] = 3;
  expect_error([&] { nlp::config_from_json(j, "ds.json"); }, ErrorCode::kFormat, "ds.json", "n_group 3");
  j["n_group"] = 8;
  j["topk_group"] = 1;  // one group of one expert cannot give two
  expect_error([&] { nlp::config_from_json(j, "ds.json"); }, ErrorCode::kFormat, "topk_group 1");
  j["topk_method"] = "noaux_tc";
  expect_error([&] { nlp::config_from_json(j, "ds.json"); }, ErrorCode::kUnsupported, "topk_method", "noaux_tc");
}

}  // namespace
}  // namespace spore::test::llm
