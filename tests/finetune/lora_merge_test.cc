// `spore merge` (NOTE [LoRA merge]) against two independent references: the engine applying the
// same adapters unmerged (y = W x + s B A x, NOTE [LoRA adapters]) and PEFT's own merge_and_unload
// of the committed fixture adapters (tests/fixtures/lora/reference.safetensors from
// tools/make_lora_fixtures.py, merge_reference.safetensors from tools/make_merge_fixtures.py).
// Every base/output pair: GGUF -> GGUF (float32, requantised Q8_0, retyped), Hugging Face ->
// Hugging Face, Hugging Face -> GGUF through spore convert (llama's q/k rows permuted after the
// merge); the merged GGUF generates through `spore generate` as the base with --lora does; and the
// refusals: an out path that is an input, a missing folder, a non-empty folder, the wrong type for
// the format, an adapter of another shape or architecture, a target the base lacks.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "nlp/model_test_util.h"
#include "nlp/spore_cli_run.h"
#include "spore/error.h"
#include "spore/format.h"
#include "spore/gguf.h"
#include "spore/gguf_writer.h"
#include "spore/nlp/lora.h"
#include "spore/nlp/lora_merge.h"
#include "spore/ops.h"

namespace spore::test {
namespace {

namespace fs = std::filesystem;
using llm::fixture_dir;
using llm::logits_diff;
using llm::read_json;

const fs::path kLora = fs::path(SPORE_SOURCE_DIR) / "tests/fixtures/lora";
const fs::path kGgufBase = fixture_dir("llama") / "model-llama-cpp.gguf";  // llama.cpp's converter: q/k permuted
const fs::path kHfBase = fixture_dir("llama") / "hf";
const std::vector<int32_t> kIds = {1, 17, 42, 99, 3, 250, 7, 64};  // tools/make_lora_fixtures.py's IDS

const SafeTensors& peft() {
  static const SafeTensors refs = [] {
    SafeTensors r = load_safetensors(kLora / "reference.safetensors");
    for (auto& [k, v] : load_safetensors(kLora / "merge_reference.safetensors").tensors) r.tensors[k] = v;
    return r;
  }();
  return refs;
}

// A scratch folder per test, removed after it.
struct Scratch {
  fs::path root = fs::temp_directory_path() /
                  ("spore_merge." + std::to_string(::getpid()) + "." +
                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
  Scratch() {
    fs::remove_all(root);
    fs::create_directories(root);
  }
  ~Scratch() { fs::remove_all(root); }
  // What the folder holds, hidden work folders included (a failed merge leaves nothing).
  std::vector<std::string> entries() const {
    std::vector<std::string> v;
    for (const auto& e : fs::directory_iterator(root)) v.push_back(e.path().filename().string());
    return v;
  }
};

nlp::LoadedModel load(const fs::path& p) {
  nlp::LoadOptions o;
  o.numerics = nlp::LoadOptions::Numerics::kReference;  // float32 as transformers
  return nlp::load_model(p, o);
}

// Every position's logits of `ids` with `uses` applied unmerged.
Tensor logits(nlp::LoadedModel& m, const std::vector<nlp::LoraUse>& uses = {}, const std::vector<int32_t>& ids = kIds) {
  auto cache = m.lm->make_cache(1, (int64_t)ids.size(), DType::kFloat32);
  nlp::SequenceChunk c{0, 0, ids, true};
  c.lora = uses;
  return m.lm->forward({&c, 1}, *cache);
}

Tensor merged_logits(const fs::path& p) {
  auto m = load(p);
  return logits(m);
}

template <typename F>
ErrorCode code_of(F&& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.code();
  }
  return ErrorCode::kInternal;  // no error: the caller's expectation fails
}

constexpr double kTol = 1e-4;

nlp::MergeOptions typed(const std::string& type) {
  nlp::MergeOptions o;
  o.type = type;
  return o;
}

TEST(LoraMerge, GgufBaseEqualsTheUnmergedEngineAndPeft) {
  Scratch s;
  const fs::path out = s.root / "merged.gguf";
  const nlp::MergeReport r = nlp::merge_lora(kGgufBase, {{kLora / "a", 1.0}}, out);  // PEFT adapter, HF row order
  EXPECT_EQ(r.merged_tensors, 14);  // 7 projections x 2 layers
  EXPECT_EQ(r.out_format, "gguf");
  auto base = load(kGgufBase);
  const auto a = nlp::load_lora(kLora / "a", base);
  const Tensor got = merged_logits(out);
  EXPECT_LT(logits_diff(got, logits(base, {{a, 1.0}})), kTol);
  EXPECT_LT(logits_diff(got, peft().at("logits_a")), kTol);
  EXPECT_GT(logits_diff(got, peft().at("logits_base")), 0.5);  // the merge changed the model
  // Metadata and untouched tensors are the base's; the merged ones differ, in the same type.
  const GgufFile g(out), b(kGgufBase);
  EXPECT_EQ(g.get_strings("tokenizer.ggml.tokens"), b.get_strings("tokenizer.ggml.tokens"));
  EXPECT_EQ(g.get_string("general.architecture"), "llama");
  EXPECT_EQ(g.tensors().size(), b.tensors().size());
  for (const GgufTensorInfo& t : b.tensors()) {
    EXPECT_EQ(g.tensor_info(t.name).type, t.type) << t.name;
    const auto x = g.tensor_bytes(t.name), y = b.tensor_bytes(t.name);
    const bool same = x.size() == y.size() && std::equal(x.begin(), x.end(), y.begin());
    EXPECT_EQ(same, t.name.find("attn_norm") != std::string::npos || t.name.find("ffn_norm") != std::string::npos ||
                        t.name.find("blk.") == std::string::npos)
        << t.name;
  }
}

TEST(LoraMerge, TwoAdaptersIntoAHuggingFaceFolderEqualPeftsMerges) {
  Scratch s;
  const fs::path out = s.root / "merged";
  // The GGUF adapter (llama.cpp's permuted q/k rows) on the Hugging Face base, then b at half.
  const nlp::MergeReport r = nlp::merge_lora(kHfBase, {{kLora / "a.gguf", 1.0}, {kLora / "b", 0.5}}, out);
  EXPECT_EQ(r.out_format, "safetensors");
  EXPECT_EQ(r.adapter_pairs, 14 + 3);
  EXPECT_EQ(r.merged_tensors, 14);  // b's three are among a's
  const Tensor got = merged_logits(out);
  EXPECT_LT(logits_diff(got, peft().at("logits_a_b_half")), kTol);
  auto base = load(kHfBase);
  const auto a = nlp::load_lora(kLora / "a.gguf", base), b = nlp::load_lora(kLora / "b", base);
  EXPECT_LT(logits_diff(got, logits(base, {{a, 1.0}, {b, 0.5}})), kTol);
  EXPECT_GT(logits_diff(got, peft().at("logits_a")), 0.05);  // b's half counts
  // The other files are the base's, byte for byte; the weights are one file of the same tensors.
  for (const char* f : {"config.json", "generation_config.json", "tokenizer.model"})
    EXPECT_EQ(read_file_bytes(out / f), read_file_bytes(kHfBase / f)) << f;
  const SafeTensorsFile w(out / "model.safetensors"), bw(kHfBase / "model.safetensors");
  ASSERT_EQ(w.tensors().size(), bw.tensors().size());
  for (size_t i = 0; i < w.tensors().size(); ++i) {
    EXPECT_EQ(w.tensors()[i].name, bw.tensors()[i].name);
    EXPECT_EQ(w.tensors()[i].dtype, bw.tensors()[i].dtype);
  }
}

TEST(LoraMerge, HalfPrecisionFolderSaysSoInItsConfig) {
  Scratch s;
  const fs::path out = s.root / "bf16";
  fs::create_directories(out);  // an empty folder is replaced
  nlp::merge_lora(kHfBase, {{kLora / "a", 0.5}}, out, typed("bf16"));
  const SafeTensorsFile w(out / "model.safetensors");
  for (const SafeTensorInfo& t : w.tensors()) EXPECT_EQ(t.dtype, DType::kBFloat16) << t.name;
  EXPECT_EQ(read_json(out / "config.json").at("dtype"), "bfloat16");
  // bf16 weights keep 8 bits of mantissa: near the merged model, not equal to it.
  const double d = logits_diff(merged_logits(out), peft().at("logits_a_half"));
  EXPECT_LT(d, 0.1);
  EXPECT_GT(logits_diff(peft().at("logits_a_half"), peft().at("logits_base")), 10 * d);
}

TEST(LoraMerge, QuantizedBaseIsRequantizedInItsOwnType) {
  Scratch s;
  const fs::path base_path = fixture_dir("llama") / "model-q8_0.gguf", out = s.root / "q8.gguf";
  nlp::merge_lora(base_path, {{kLora / "a.gguf", 1.0}}, out);
  const GgufFile g(out), b(base_path);
  for (const GgufTensorInfo& t : b.tensors()) EXPECT_EQ(g.tensor_info(t.name).type, t.type) << t.name;
  EXPECT_EQ(g.get_int("general.file_type"), b.get_int("general.file_type"));
  // No PEFT reference of Q8_0 weights: the merged model must sit as near PEFT's merged float model
  // as the Q8_0 base sits near the float base, and as near as the unmerged engine does.
  auto base = nlp::load_model(base_path);
  const auto a = nlp::load_lora(kLora / "a.gguf", base);
  const double base_err = logits_diff(logits(base), peft().at("logits_base"));
  const double unmerged_err = logits_diff(logits(base, {{a, 1.0}}), peft().at("logits_a"));
  const double merged_err = logits_diff(merged_logits(out), peft().at("logits_a"));
  EXPECT_LT(merged_err, 3 * base_err + 1e-3) << "base " << base_err << ", unmerged " << unmerged_err;
  EXPECT_LT(merged_err, 3 * unmerged_err + 1e-3) << "unmerged " << unmerged_err;
  EXPECT_GT(logits_diff(logits(base), peft().at("logits_a")), 10 * merged_err);
}

TEST(LoraMerge, RequestedTypeRetypesTheMatricesOnly) {
  Scratch s;
  const fs::path out = s.root / "q4.gguf";
  // q4_k's 256-value blocks do not fit rows of 32: llama.cpp's fallback (q5_0), reported.
  const nlp::MergeReport r = nlp::merge_lora(kGgufBase, {{kLora / "a", 1.0}}, out, typed("q4_k"));
  EXPECT_FALSE(r.notes.empty());
  const GgufFile g(out);
  EXPECT_EQ(g.get_int("general.file_type"), 14);  // llama.cpp's MOSTLY_Q4_K_S
  for (const GgufTensorInfo& t : g.tensors()) {
    const bool matrix = t.dims.size() == 2;
    EXPECT_EQ(t.type, matrix ? GgmlType::kQ5_0 : GgmlType::kF32) << t.name;
  }
  // Q5_0 weights, no PEFT reference of their own: the merged model sits as near PEFT's merged float
  // model as the base retyped alone (an adapter at scale 0) sits near the float base.
  const fs::path plain = s.root / "q4-base.gguf";
  nlp::merge_lora(kGgufBase, {{kLora / "a", 0.0}}, plain, typed("q4_k"));
  const double base_err = logits_diff(merged_logits(plain), peft().at("logits_base"));
  const double merged_err = logits_diff(merged_logits(out), peft().at("logits_a"));
  EXPECT_LT(merged_err, 2 * base_err) << "retyped base " << base_err;
  EXPECT_GT(logits_diff(merged_logits(out), peft().at("logits_base")), 2 * merged_err);
}

// ---- Hugging Face -> GGUF, and `spore generate` on the result ----------------------------------

// A tiny random llama with a real byte-level BPE tokenizer (spore convert writes GGUF only from
// such a folder) and a PEFT adapter on q, k, v and down written here: rank 2, alpha 4.
struct TokenizedModel {
  fs::path dir, adapter;
  explicit TokenizedModel(const fs::path& root) : dir(root / "base"), adapter(root / "adapter") {
    const fs::path tok = fs::path(SPORE_SOURCE_DIR) / "tests/fixtures/convert/llama";  // hidden 64, 2 layers
    fs::create_directories(dir);
    fs::create_directories(adapter);
    for (const char* f : {"config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json"})
      fs::copy_file(tok / f, dir / f);
    struct Shape2 {
      const char* name;
      int64_t rows, cols;
    };
    const Shape2 model_wide[] = {{"model.embed_tokens.weight", 320, 64}, {"lm_head.weight", 320, 64}};
    const Shape2 per_layer[] = {{"self_attn.q_proj", 64, 64}, {"self_attn.k_proj", 32, 64}, {"self_attn.v_proj", 32, 64},
                                {"self_attn.o_proj", 64, 64}, {"mlp.gate_proj", 160, 64},   {"mlp.up_proj", 160, 64},
                                {"mlp.down_proj", 64, 160}};
    std::vector<std::pair<std::string, Tensor>> w, lora;
    uint64_t seed = 100;
    for (const Shape2& t : model_wide) w.emplace_back(t.name, random_normal({t.rows, t.cols}, ++seed, 0, 0.05));
    w.emplace_back("model.norm.weight", full({64}, 1.0));
    for (int layer = 0; layer < 2; ++layer) {
      const std::string p = "model.layers." + std::to_string(layer) + ".";
      for (const char* norm : {"input_layernorm", "post_attention_layernorm"})
        w.emplace_back(p + norm + ".weight", full({64}, 1.0));
      for (const Shape2& t : per_layer) {
        w.emplace_back(p + t.name + ".weight", random_normal({t.rows, t.cols}, ++seed, 0, 0.05));
        const std::string m(t.name);
        if (m.find("o_proj") != std::string::npos || m.find("gate") != std::string::npos || m.find("up") != std::string::npos)
          continue;
        const std::string key = "base_model.model." + p + t.name;
        lora.emplace_back(key + ".lora_A.weight", random_normal({2, t.cols}, ++seed, 0, 0.3));
        lora.emplace_back(key + ".lora_B.weight", random_normal({t.rows, 2}, ++seed, 0, 0.3));
      }
    }
    save_safetensors(dir / "model.safetensors", w);
    save_safetensors(adapter / "adapter_model.safetensors", lora);
    std::ofstream(adapter / "adapter_config.json")
        << R"({"peft_type": "LORA", "r": 2, "lora_alpha": 4, "target_modules": ["q_proj", "k_proj", "v_proj", "down_proj"]})";
  }
};

TEST(LoraMerge, HuggingFaceBaseToGgufPermutesAfterMerging) {
  Scratch s;
  const TokenizedModel m(s.root);
  const fs::path out = s.root / "merged.gguf";
  const nlp::MergeReport r = nlp::merge_lora(m.dir, {{m.adapter, 1.0}}, out);  // float32 base: f32
  EXPECT_EQ(r.merged_tensors, 8);
  const GgufFile g(out);
  EXPECT_EQ(g.tensor_info("blk.0.attn_q.weight").type, GgmlType::kF32);
  EXPECT_TRUE(g.contains("tokenizer.ggml.merges"));
  auto base = load(m.dir);
  const auto a = nlp::load_lora(m.adapter, base);
  const std::vector<int32_t> ids = {5, 77, 300, 12, 9};
  auto merged = load(out);
  const Tensor got = logits(merged, {}, ids), want = logits(base, {{a, 1.0}}, ids);
  EXPECT_LT(logits_diff(got, want), kTol);
  EXPECT_GT(logits_diff(got, logits(base, {}, ids)), 100 * kTol);
  // No work folder is left beside the output.
  for (const std::string& e : s.entries()) EXPECT_NE(e[0], '.') << e;
}

TEST(LoraMerge, MergedGgufGeneratesAsTheBaseWithTheAdapter) {
  Scratch s;
  const TokenizedModel m(s.root);
  const fs::path out = s.root / "merged.gguf";
  const CliRun merge = run_spore("merge --quiet --model " + m.dir.string() + " --lora " + m.adapter.string() +
                                     " --out " + out.string(),
                                 "", "merge_cli");
  ASSERT_EQ(merge.status, 0) << merge.err;
  EXPECT_NE(merge.out.find("8 of"), std::string::npos) << merge.out;
  const std::string gen = " --prompt 'hello world' --max-tokens 12 --temperature 0 --print-ids --numerics reference";
  const CliRun merged = run_spore("generate --model " + out.string() + gen, "", "merge_gen1");
  const CliRun unmerged = run_spore("generate --model " + m.dir.string() + " --lora " + m.adapter.string() + gen, "", "merge_gen2");
  const CliRun plain = run_spore("generate --model " + m.dir.string() + gen, "", "merge_gen3");
  ASSERT_EQ(merged.status, 0) << merged.err;
  ASSERT_EQ(unmerged.status, 0) << unmerged.err;
  EXPECT_EQ(merged.out, unmerged.out);
  EXPECT_NE(merged.out, plain.out);  // the adapter changes the greedy text: the comparison can fail
}

// ---- refusals ----------------------------------------------------------------------------------

TEST(LoraMerge, RefusesOutPathsThatAreInputsOrUnwritable) {
  Scratch s;
  std::string msg;
  const fs::path copy = s.root / "base.gguf";
  fs::copy_file(kGgufBase, copy);
  const auto before = sha256_file(copy);
  EXPECT_EQ(code_of([&] { nlp::merge_lora(copy, {{kLora / "a", 1.0}}, s.root / "." / "base.gguf"); }, &msg), ErrorCode::kValue);
  EXPECT_NE(msg.find("overwrite the input"), std::string::npos) << msg;
  EXPECT_EQ(sha256_file(copy), before);
  EXPECT_EQ(code_of([&] { nlp::merge_lora(kGgufBase, {{kLora / "a.gguf", 1.0}}, kLora / "a.gguf"); }), ErrorCode::kValue);
  EXPECT_EQ(code_of([&] { nlp::merge_lora(kHfBase, {{kLora / "a", 1.0}}, kHfBase); }), ErrorCode::kValue);
  EXPECT_EQ(code_of([&] { nlp::merge_lora(kGgufBase, {{kLora / "a", 1.0}}, s.root / "no/such/m.gguf"); }, &msg), ErrorCode::kIO);
  EXPECT_NE(msg.find("does not exist"), std::string::npos) << msg;
  fs::create_directories(s.root / "full");
  std::ofstream(s.root / "full" / "x") << "x";
  EXPECT_EQ(code_of([&] { nlp::merge_lora(kHfBase, {{kLora / "a", 1.0}}, s.root / "full"); }), ErrorCode::kValue);
  EXPECT_EQ(code_of([&] { nlp::merge_lora(kGgufBase, {{kLora / "a", 1.0}}, s.root / "hf"); }), ErrorCode::kUnsupported);
  EXPECT_EQ(code_of([&] { nlp::merge_lora(kHfBase, {{kLora / "a", 1.0}}, s.root / "hf", typed("q8_0")); }), ErrorCode::kValue);
  EXPECT_EQ(code_of([&] { nlp::merge_lora(kGgufBase, {{kLora / "a", 1.0}}, s.root / "m.gguf", typed("q3_k")); }), ErrorCode::kValue);
  EXPECT_EQ(code_of([&] { nlp::merge_lora(kGgufBase, {}, s.root / "m.gguf"); }), ErrorCode::kValue);
  // Nothing was written but what the test made.
  auto e = s.entries();
  std::sort(e.begin(), e.end());
  EXPECT_EQ(e, (std::vector<std::string>{"base.gguf", "full"}));
}

TEST(LoraMerge, RefusesAdaptersOfAnotherModelNamingTheTensor) {
  Scratch s;
  std::string msg;
  // Shape: adapter a (hidden 32) on a model of hidden 64.
  const TokenizedModel m(s.root);
  EXPECT_EQ(code_of([&] { nlp::merge_lora(m.dir, {{kLora / "a", 1.0}}, s.root / "x.gguf"); }, &msg), ErrorCode::kShape);
  EXPECT_NE(msg.find("lora_A"), std::string::npos) << msg;
  // Architecture: llama's GGUF adapter on a qwen2 base.
  EXPECT_EQ(code_of([&] { nlp::merge_lora(fixture_dir("qwen2") / "model.gguf", {{kLora / "a.gguf", 1.0}}, s.root / "x.gguf"); }, &msg),
            ErrorCode::kValue);
  EXPECT_NE(msg.find("architecture"), std::string::npos) << msg;
  // A target the base does not hold: the GGUF fixture without blk.1.attn_v.weight.
  const GgufFile b(fixture_dir("llama") / "model.gguf");
  GgufWriter w;
  for (const auto& [k, v] : b.metadata()) w.set(k, v);
  for (const GgufTensorInfo& t : b.tensors())
    if (t.name != "blk.1.attn_v.weight") {
      const auto bytes = b.tensor_bytes(t.name);
      w.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(bytes.begin(), bytes.end()));
    }
  w.write(s.root / "holed.gguf");
  EXPECT_EQ(code_of([&] { nlp::merge_lora(s.root / "holed.gguf", {{kLora / "a", 1.0}}, s.root / "x.gguf"); }, &msg),
            ErrorCode::kFormat);
  EXPECT_NE(msg.find("blk.1.attn_v.weight"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(s.root / "x.gguf"));
}

TEST(LoraMerge, CommandLineNamesTheProblem) {
  const CliRun r = run_spore("merge --model " + kGgufBase.string() + " --lora " + (kLora / "a").string() +
                                 " --out /nonexistent-folder/m.gguf",
                             "", "merge_cli_bad");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("/nonexistent-folder"), std::string::npos) << r.err;
  EXPECT_EQ(run_spore("merge --model " + kGgufBase.string() + " --out x.gguf", "", "merge_cli_nolora").status, 2);
}

}  // namespace
}  // namespace spore::test
