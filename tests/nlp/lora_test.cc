// LoRA adapters at inference (NOTE [LoRA adapters]) against PEFT itself: tools/make_lora_fixtures.py
// trains nothing but writes random PEFT adapters over the tiny llama fixture, converts one to GGUF
// with llama.cpp's convert_lora_to_gguf.py, and records the logits of PEFT's merged model
// (merge_and_unload). Spore applies the adapters unmerged, in both formats, over the float32
// safetensors base and the converter's GGUF base (whose q/k rows are permuted), one batch mixing
// adapters; and refuses adapters that do not fit with typed errors naming the file and tensor.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>

#include "model_test_util.h"
#include "spore_cli_run.h"
#include "spore/error.h"
#include "spore/format.h"
#include "spore/nlp/generate.h"
#include "spore/nlp/lora.h"

namespace spore::test::llm {
namespace {

using nlp::LoraUse;

std::filesystem::path lora_dir() { return std::filesystem::path(SPORE_SOURCE_DIR) / "tests" / "fixtures" / "lora"; }

struct LoraFixture {
  std::vector<int32_t> ids;
  SafeTensors ref;  // logits_base, logits_a, logits_a_half, logits_b, logits_a_q8_0
};

const LoraFixture& fixture() {
  static const LoraFixture f = [] {
    LoraFixture r;
    r.ids = read_json(lora_dir() / "reference.json").at("ids").get<std::vector<int32_t>>();
    r.ref = load_safetensors(lora_dir() / "reference.safetensors");
    return r;
  }();
  return f;
}

nlp::LoadedModel base(bool gguf) {
  nlp::LoadOptions o;
  o.numerics = nlp::LoadOptions::Numerics::kReference;  // float32 as transformers
  return nlp::load_model(gguf ? fixture_dir("llama") / "model-llama-cpp.gguf" : fixture_dir("llama") / "hf", o);
}

// Every position's logits of the fixture's ids, run with `uses`.
Tensor run(nlp::LoadedModel& m, const std::vector<LoraUse>& uses) {
  const auto& ids = fixture().ids;
  auto cache = m.lm->make_cache(1, (int64_t)ids.size(), DType::kFloat32);
  nlp::SequenceChunk c{0, 0, ids, true};
  c.lora = uses;
  return m.lm->forward({&c, 1}, *cache);
}

constexpr double kTol = 1e-4;

TEST(Lora, PeftAdapterMatchesPeftMergedModel) {
  auto m = base(false);
  const auto a = nlp::load_lora(lora_dir() / "a", m);
  EXPECT_EQ(a->format, "peft");
  EXPECT_EQ(a->pairs, 14);  // 7 projections x 2 layers
  EXPECT_EQ(a->max_rank, 4);
  EXPECT_LT(logits_diff(run(m, {{a, 1.0}}), fixture().ref.at("logits_a")), kTol);
  EXPECT_LT(logits_diff(run(m, {{a, 0.5}}), fixture().ref.at("logits_a_half")), kTol);
  // Without the adapter the model is far from the merged one: the comparison above can fail.
  EXPECT_GT(logits_diff(run(m, {}), fixture().ref.at("logits_a")), 0.5);
}

TEST(Lora, ScaleZeroIsTheBaseModelExactly) {
  auto m = base(false);
  const auto a = nlp::load_lora(lora_dir() / "a", m);
  const Tensor plain = run(m, {}), zero = run(m, {{a, 0.0}});
  EXPECT_EQ(logits_diff(plain, zero), 0.0);
  EXPECT_LT(logits_diff(plain, fixture().ref.at("logits_base")), kTol);
}

TEST(Lora, RsLoraOnOneLayerMatchesPeft) {
  auto m = base(false);
  const auto b = nlp::load_lora(lora_dir() / "b" / "adapter_config.json", m);
  EXPECT_EQ(b->pairs, 3);
  EXPECT_FALSE(b->at(0, nlp::LoraProjection::kQ).defined());
  EXPECT_DOUBLE_EQ(b->at(1, nlp::LoraProjection::kQ).scale, 3.0 / std::sqrt(2.0));  // alpha / sqrt(r)
  EXPECT_LT(logits_diff(run(m, {{b, 1.0}}), fixture().ref.at("logits_b")), kTol);
}

TEST(Lora, LlamaCppGgufAdapterMatchesPeftOnEitherBase) {
  for (bool gguf_base : {false, true}) {
    SCOPED_TRACE(gguf_base ? "GGUF base" : "safetensors base");
    auto m = base(gguf_base);
    const auto a = nlp::load_lora(lora_dir() / "a.gguf", m);
    EXPECT_EQ(a->format, "gguf");
    EXPECT_DOUBLE_EQ(a->alpha, 8.0);
    EXPECT_LT(logits_diff(run(m, {{a, 1.0}}), fixture().ref.at("logits_a")), kTol);
    // PEFT's Hugging Face row order on the converter's permuted q/k rows, and back.
    const auto p = nlp::load_lora(lora_dir() / "a", m);
    EXPECT_LT(logits_diff(run(m, {{p, 1.0}}), fixture().ref.at("logits_a")), kTol);
  }
}

TEST(Lora, QuantizedGgufAdapterIsDequantized) {
  // convert_lora_to_gguf.py --outtype q8_0: A in Q8_0 blocks, B (rows of 4) in F16. The reference
  // merges the file's values as gguf-py (llama.cpp's package) dequantizes them into PEFT's model.
  auto m = base(false);
  const auto q = nlp::load_lora(lora_dir() / "a-q8_0.gguf", m);
  EXPECT_LT(logits_diff(run(m, {{q, 1.0}}), fixture().ref.at("logits_a_q8_0")), kTol);
  // The rounding shows: the float adapter's reference is not this one's.
  EXPECT_GT(logits_diff(run(m, {{q, 1.0}}), fixture().ref.at("logits_a")), 100 * kTol);
}

TEST(Lora, QuantizedBaseTakesTheAdapterToo) {
  // Q8_0 weights: no PEFT reference of its own, so the adapter must move the logits from the Q8_0
  // base's own distance to the float32 base to the same distance from the merged model.
  auto m = nlp::load_model(fixture_dir("llama") / "model-q8_0.gguf");
  const auto a = nlp::load_lora(lora_dir() / "a.gguf", m);
  const double base_err = logits_diff(run(m, {}), fixture().ref.at("logits_base"));
  const double lora_err = logits_diff(run(m, {{a, 1.0}}), fixture().ref.at("logits_a"));
  EXPECT_LT(lora_err, 3 * base_err + 1e-3) << "base error " << base_err;
  EXPECT_GT(logits_diff(run(m, {}), fixture().ref.at("logits_a")), 10 * lora_err);
}

TEST(Lora, OneBatchMixesAdaptersPerSequence) {
  auto m = base(false);
  const auto a = nlp::load_lora(lora_dir() / "a.gguf", m);
  const auto b = nlp::load_lora(lora_dir() / "b", m);
  const auto& ids = fixture().ids;
  auto cache = m.lm->make_cache(4, (int64_t)ids.size(), DType::kFloat32);
  const std::vector<LoraUse> use_a{{a, 1.0}}, use_b{{b, 1.0}}, use_half{{a, 0.5}};
  std::vector<nlp::SequenceChunk> chunks(4);
  const std::vector<const std::vector<LoraUse>*> uses{&use_a, &use_b, nullptr, &use_half};
  for (int s = 0; s < 4; ++s) {
    chunks[s] = nlp::SequenceChunk{s, 0, ids, true};
    if (uses[s]) chunks[s].lora = *uses[s];
  }
  const Tensor all = m.lm->forward(chunks, *cache);
  const int64_t n = (int64_t)ids.size();
  const char* want[] = {"logits_a", "logits_b", "logits_base", "logits_a_half"};
  for (int s = 0; s < 4; ++s)
    EXPECT_LT(logits_diff(slice(all, 0, s * n, (s + 1) * n).contiguous(), fixture().ref.at(want[s])), kTol) << want[s];
}

// The engine tests' settings: greedy, past EOS, no model defaults; a float32 cache of 32 positions.
nlp::GenerateOptions greedy(int max_tokens) {
  nlp::GenerateOptions o;
  o.max_tokens = max_tokens;
  o.sampling.temperature = 0;
  o.ignore_eos = true;
  o.apply_model_defaults = false;
  return o;
}
nlp::EngineOptions engine_options() {
  nlp::EngineOptions e;
  e.context = 32;
  e.kv_dtype = DType::kFloat32;
  return e;
}

TEST(Lora, EnginePrefixCacheDoesNotShareRowsAcrossAdapters) {
  // The same prompt first with an adapter, then without: reusing the first sequence's KV rows
  // would give the second the adapter's attention keys.
  auto m = base(false);
  const auto a = nlp::load_lora(lora_dir() / "a", m);
  const auto& ids = fixture().ids;
  const nlp::GenerateOptions o = greedy(6);
  const nlp::EngineOptions e = engine_options();
  const std::vector<int32_t> plain = nlp::generate_ids(m, ids, o, {}, e).tokens;
  nlp::Engine engine(m, e);
  nlp::GenerateOptions with = o;
  with.lora = {{a, 1.0}};
  std::map<uint64_t, std::vector<int32_t>> out;
  auto drain = [&] {
    while (!engine.idle())
      for (const auto& ev : engine.step())
        if (ev.token) out[ev.sequence].push_back(*ev.token);
  };
  const uint64_t first = engine.add(ids, with);
  drain();
  const uint64_t second = engine.add(ids, o);
  drain();
  EXPECT_EQ(engine.timings(second).cached_prompt_tokens, 0);
  EXPECT_EQ(out[second], plain);
  // The adapter's greedy tokens are the merged model's argmax at the prompt's end.
  const auto want = fixture().ref.at("logits_a").to_vector<float>();
  const size_t vocab = want.size() / ids.size();
  EXPECT_EQ(out[first].at(0), argmax_row(want, ids.size() - 1, vocab));
  EXPECT_NE(out[first], plain);
}

TEST(Lora, EngineBatchesSequencesWithDifferentAdapters) {
  // Three sequences decoded together (adapter a, adapter b at 2, none) give each its solo tokens.
  auto m = base(false);
  const auto a = nlp::load_lora(lora_dir() / "a", m), b = nlp::load_lora(lora_dir() / "b", m);
  const nlp::GenerateOptions o = greedy(8);
  nlp::EngineOptions e = engine_options();
  const std::vector<std::vector<LoraUse>> uses{{{a, 1.0}}, {{b, 2.0}}, {}};
  std::vector<std::vector<int32_t>> solo;
  for (const auto& u : uses) {
    nlp::GenerateOptions one = o;
    one.lora = u;
    solo.push_back(nlp::generate_ids(m, fixture().ids, one, {}, e).tokens);
  }
  EXPECT_NE(solo[0], solo[2]);
  EXPECT_NE(solo[1], solo[2]);
  e.slots = 3;
  nlp::Engine engine(m, e);
  std::vector<uint64_t> seq;
  for (const auto& u : uses) {
    nlp::GenerateOptions one = o;
    one.lora = u;
    seq.push_back(engine.add(fixture().ids, one));
  }
  std::map<uint64_t, std::vector<int32_t>> out;
  while (!engine.idle())
    for (const auto& ev : engine.step())
      if (ev.token) out[ev.sequence].push_back(*ev.token);
  for (size_t i = 0; i < uses.size(); ++i) EXPECT_EQ(out[seq[i]], solo[i]) << "sequence " << i;
}

// A scratch copy of adapter `a` to damage.
std::filesystem::path scratch_adapter(const std::string& tag) {
  const auto dir = std::filesystem::temp_directory_path() / ("spore_lora_test_" + tag + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (const auto& e : std::filesystem::directory_iterator(lora_dir() / "a"))
    std::filesystem::copy_file(e.path(), dir / e.path().filename());
  return dir;
}

// Rewrites the scratch adapter's tensors through `edit`.
void edit_tensors(const std::filesystem::path& dir,
                  const std::function<void(std::vector<std::pair<std::string, Tensor>>&)>& edit) {
  const SafeTensors st = load_safetensors(dir / "adapter_model.safetensors");
  std::vector<std::pair<std::string, Tensor>> t(st.tensors.begin(), st.tensors.end());
  edit(t);
  save_safetensors(dir / "adapter_model.safetensors", t);
}

template <class F>
void expect_error(F&& f, ErrorCode code, std::vector<std::string> words) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const auto& w : words) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what() << " lacks " << w;
  }
}

TEST(Lora, AdaptersThatDoNotFitAreRefusedByName) {
  auto m = base(false);
  const std::string q0 = "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight";
  {  // A with the wrong input width
    const auto dir = scratch_adapter("shape");
    edit_tensors(dir, [&](auto& t) {
      for (auto& [n, v] : t)
        if (n == q0) v = zeros({4, 16});
    });
    expect_error([&] { nlp::load_lora(dir, m); }, ErrorCode::kShape, {q0, "adapter_model.safetensors", "[4, 16]"});
  }
  {  // a layer the model does not have
    const auto dir = scratch_adapter("layer");
    edit_tensors(dir, [&](auto& t) {
      for (auto& [n, v] : t)
        if (n.find("layers.1.mlp.down_proj") != std::string::npos) n.replace(n.find("layers.1"), 8, "layers.7");
    });
    expect_error([&] { nlp::load_lora(dir, m); }, ErrorCode::kValue, {"layers.7", "layer 7"});
  }
  {  // a half without the other
    const auto dir = scratch_adapter("half");
    edit_tensors(dir, [&](auto& t) { std::erase_if(t, [&](auto& p) { return p.first == q0; }); });
    expect_error([&] { nlp::load_lora(dir, m); }, ErrorCode::kFormat, {"q_proj.lora_B.weight", "lora_A"});
  }
  {  // the embedding and the head are not adapted here
    const auto dir = scratch_adapter("head");
    edit_tensors(dir, [&](auto& t) {
      t.push_back({"base_model.model.lm_head.lora_A.weight", zeros({4, 32})});
      t.push_back({"base_model.model.lm_head.lora_B.weight", zeros({256, 4})});
    });
    expect_error([&] { nlp::load_lora(dir, m); }, ErrorCode::kUnsupported, {"lm_head", "q_proj"});
  }
  {  // a module this family does not have
    const auto dir = scratch_adapter("module");
    auto cfg = read_json(dir / "adapter_config.json");
    cfg["target_modules"] = {"q_proj", "c_attn"};
    write_text(dir / "adapter_config.json", cfg.dump());
    expect_error([&] { nlp::load_lora(dir, m); }, ErrorCode::kUnsupported, {"c_attn", "adapter_config.json", "llama"});
  }
  {  // DoRA
    const auto dir = scratch_adapter("dora");
    auto cfg = read_json(dir / "adapter_config.json");
    cfg["use_dora"] = true;
    write_text(dir / "adapter_config.json", cfg.dump());
    expect_error([&] { nlp::load_lora(dir, m); }, ErrorCode::kUnsupported, {"use_dora"});
  }
  // A GGUF model where an adapter belongs, and an adapter of another architecture.
  expect_error([&] { nlp::load_lora(fixture_dir("llama") / "model.gguf", m); }, ErrorCode::kFormat, {"general.type"});
  auto qwen = nlp::load_model(fixture_dir("qwen2") / "hf");
  expect_error([&] { nlp::load_lora(lora_dir() / "a.gguf", qwen); }, ErrorCode::kValue, {"a.gguf", "\"llama\"", "\"qwen2\""});
  // An adapter loaded for one model is refused by another.
  const auto a = nlp::load_lora(lora_dir() / "a", m);
  auto other = base(false);
  expect_error([&] { run(other, {{a, 1.0}}); }, ErrorCode::kValue, {"another model"});
}

// `spore generate --lora` gives the library's greedy ids with the same adapters (PATH:SCALE too).
TEST(Lora, GenerateCommandAppliesAdapters) {
  const std::string model = (fixture_dir("llama") / "model-llama-cpp.gguf").string();
  const std::string a = (lora_dir() / "a.gguf").string(), b = (lora_dir() / "b").string();
  auto cli_ids = [&](const std::string& flags) {
    const CliRun r = run_spore("generate --model " + model + " --prompt 'The quick brown fox' --max-tokens 8 "
                               "--temperature 0 --print-ids " + flags, "", "lora_cli");
    EXPECT_EQ(r.status, 0) << r.err;
    return r.status == 0 ? nlohmann::json::parse(r.out).at("ids").get<std::vector<int32_t>>() : std::vector<int32_t>{};
  };
  const nlp::LoadedModel m = nlp::load_model(model, {.require_tokenizer = true});
  auto lib_ids = [&](std::vector<std::pair<std::string, double>> uses) {
    nlp::GenerateOptions o;
    o.max_tokens = 8;
    o.sampling.temperature = 0;
    o.apply_model_defaults = false;
    for (const auto& [path, scale] : uses) o.lora.push_back({nlp::load_lora(path, m), scale});
    return nlp::generate(m, "The quick brown fox", o).tokens;
  };
  const auto plain = lib_ids({});
  const auto both = lib_ids({{a, 1.0}, {b, 0.5}});
  EXPECT_NE(plain, both);
  EXPECT_EQ(cli_ids(""), plain);
  EXPECT_EQ(cli_ids("--lora " + a + " --lora " + b + ":0.5"), both);
  EXPECT_EQ(cli_ids("--lora " + a + ":0"), plain);
  const CliRun bad = run_spore("generate --model " + model + " --prompt x --lora " +
                                   (fixture_dir("llama") / "model.gguf").string(), "", "lora_cli_bad");
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.err.find("general.type"), std::string::npos) << bad.err;
}

// `spore logits --lora PATH:SCALE` prints PEFT's merged-model logits at that scale.
TEST(Lora, LogitsCommandAppliesAdapters) {
  std::string ids;
  for (int32_t id : fixture().ids) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  const CliRun r = run_spore("logits --model " + (fixture_dir("llama") / "hf").string() + " --ids " + ids + " --lora " +
                                 (lora_dir() / "a").string() + ":0.5", "", "lora_logits");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto rows = nlohmann::json::parse(r.out).get<std::vector<std::vector<float>>>();
  std::vector<float> flat;
  for (const auto& row : rows) flat.insert(flat.end(), row.begin(), row.end());
  const Tensor got = Tensor::from_vector(flat, Shape{(int64_t)rows.size(), (int64_t)rows.at(0).size()});
  EXPECT_LT(logits_diff(got, fixture().ref.at("logits_a_half")), kTol);
}

TEST(Lora, CommandLineArgument) {
  EXPECT_EQ(nlp::parse_lora_argument("x.gguf"), std::make_pair(std::filesystem::path("x.gguf"), 1.0));
  EXPECT_EQ(nlp::parse_lora_argument("dir/a:0.25"), std::make_pair(std::filesystem::path("dir/a"), 0.25));
  EXPECT_EQ(nlp::parse_lora_argument("a:-1"), std::make_pair(std::filesystem::path("a"), -1.0));
  EXPECT_EQ(nlp::parse_lora_argument("odd:name"), std::make_pair(std::filesystem::path("odd:name"), 1.0));
  expect_error([] { nlp::parse_lora_argument("a:"); }, ErrorCode::kValue, {"scale"});
  expect_error([] { nlp::parse_lora_argument("a:inf"); }, ErrorCode::kValue, {"finite"});
  expect_error([] { nlp::parse_lora_argument(""); }, ErrorCode::kValue, {"path"});
}

}  // namespace
}  // namespace spore::test::llm
